"""``npudoctor lint``: behaviours on files written here, run in-process (tests/clirun.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from tests.clirun import npudoctor


def _lint(tmp_path: Path, name: str, text: Any, *args: str) -> Tuple[int, Dict[str, Any]]:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    res = npudoctor("lint", "--json", *args, path)
    assert res.stderr == ""
    return res.returncode, json.loads(res.stdout)


def _codes(doc: Dict[str, Any]) -> List[Tuple[int, str]]:
    return [(f["line"], f["code"]) for f in doc["findings"]]


def _fixes(doc: Dict[str, Any], code: str) -> List[str]:
    return [f["fix"] for f in doc["findings"] if f["code"] == code]


def test_aliases_of_torch_cuda_are_followed(tmp_path: Path) -> None:
    code, doc = _lint(
        tmp_path,
        "a.py",
        "import torch.cuda as tc\nfrom torch import cuda\nfrom torch.cuda import synchronize as sync\n"
        "tc.synchronize()\ncuda.get_device_capability()\nsync()\n",
    )
    assert code == 1
    assert _codes(doc) == [(1, "LNT023"), (4, "LNT003"), (5, "LNT003"), (6, "LNT003")]
    assert doc["findings"][1]["fix"] == "torch.npu.synchronize"
    assert "no NPU counterpart" in doc["findings"][2]["message"]


_NVTX_STEP = (
    "import torch\n"
    "import torch.cuda.nvtx as nvtx\n"
    "\n"
    "\n"
    "def train_step(model, batch, opt):\n"
    '    torch.cuda.nvtx.range_push("forward")\n'
    "    loss = model(batch)\n"
    "    torch.cuda.nvtx.range_pop()\n"
    '    rid = nvtx.range_start("backward")\n'
    "    loss.backward()\n"
    "    nvtx.range_end(rid)\n"
    '    torch.cuda.nvtx.mark("step")\n'
    "    opt.step()\n"
)


def test_nvtx_ranges_point_to_mstx_where_the_torch_npu_line_has_it(tmp_path: Path) -> None:
    _c, new = _lint(tmp_path, "step.py", _NVTX_STEP, "--torch-npu", "2.6")
    assert _codes(new) == [(1, "LNT023"), (6, "LNT003"), (8, "LNT003"), (9, "LNT003"), (11, "LNT003"), (12, "LNT003")]
    assert _fixes(new, "LNT003") == [
        'rid = torch_npu.npu.mstx.range_start("forward") here, and torch_npu.npu.mstx.range_end(rid) '
        "at the matching range_pop",
        "torch_npu.npu.mstx.range_end(rid) with the rid that torch_npu.npu.mstx.range_start returned "
        "at the matching range_push",
        "torch_npu.npu.mstx.range_start",
        "torch_npu.npu.mstx.range_end",
        "torch_npu.npu.mstx.mark",
    ]
    assert "no NPU counterpart" not in json.dumps(new)
    _c, line21 = _lint(tmp_path, "step.py", _NVTX_STEP, "--torch-npu", "2.1")
    assert _fixes(line21, "LNT003")[2] == "torch_npu.npu.mstx.range_start (torch_npu 2.1.0.post8 and later)"
    _c, line22 = _lint(tmp_path, "step.py", _NVTX_STEP, "--torch-npu", "2.2")
    assert _fixes(line22, "LNT003")[4] == (
        "remove it or guard it for CUDA only: torch_npu 2.2 has no torch_npu.npu.mstx ranges "
        "(torch_npu 2.1.0.post8, 2.3.1.post2, 2.4.0 and later)"
    )
    _c, unknown = _lint(tmp_path, "step.py", _NVTX_STEP)
    assert (
        _fixes(unknown, "LNT003")[4] == "torch_npu.npu.mstx.mark (torch_npu 2.1.0.post8, 2.3.1.post2, 2.4.0 and later)"
    )


def test_an_apex_import_is_a_warning_with_a_one_line_message(tmp_path: Path) -> None:
    text = (
        "import torch\n"
        "from apex import amp\n"
        "from apex.parallel import DistributedDataParallel as DDP\n"
        "\n"
        'model, optimizer = amp.initialize(model, optimizer, opt_level="O1")\n'
    )
    code, doc = _lint(tmp_path, "train_apex.py", text)
    (f,) = doc["findings"]
    assert (f["line"], f["code"], f["severity"], code) == (2, "LNT008", "warning", 0)
    assert f["message"] == (
        "apex may be NVIDIA apex (CUDA extensions), Ascend's apex patch (the NPU build) or an unrelated "
        "PyPI project: the import alone cannot tell which"
    )
    _c, flash = _lint(tmp_path, "attn.py", "from flash_attn import flash_attn_func\n")
    (g,) = flash["findings"]
    assert g["severity"] == "error" and "\n" not in g["message"] and g["message"].count(". ") == 0


def test_a_cuda_only_seed_gets_the_fix_with_its_own_seed(tmp_path: Path) -> None:
    text = (
        "import random\n"
        "import numpy as np\n"
        "import torch\n"
        "\n"
        "\n"
        "def set_seed(cfg):\n"
        "    random.seed(cfg.seed)\n"
        "    np.random.seed(cfg.seed)\n"
        "    torch.cuda.manual_seed_all(cfg.seed + cfg.rank)\n"
        "\n"
        "\n"
        "torch.cuda.manual_seed(1)\n"
    )
    _c, doc = _lint(tmp_path, "seed.py", text)
    assert [(f["line"], f["fix"]) for f in doc["findings"]] == [
        (9, "torch.manual_seed(cfg.seed + cfg.rank)"),
        (12, "torch.manual_seed(1)"),
    ]


def test_each_occurrence_on_a_line_is_its_own_finding(tmp_path: Path) -> None:
    text = (
        "import torch\n"
        "import torch_npu\n"
        "\n"
        "\n"
        "def step(model, x, y):\n"
        "    x = x.cuda(); y = y.cuda()\n"
        "    loss = model(x, y)\n"
        '    print(f"mem {torch.cuda.memory_allocated()} peak", torch.cuda.max_memory_allocated())\n'
        "    return loss\n"
    )
    _c, doc = _lint(tmp_path, "step.py", text)
    got = [(f["line"], f["column"], f["code"], f["fix"]) for f in doc["findings"]]
    assert got == [
        (6, 9, "LNT001", ".npu() or .to(device)"),
        (6, 23, "LNT001", ".npu() or .to(device)"),
        (8, 18, "LNT003", "torch.npu.memory_allocated"),
        (8, 56, "LNT003", "torch.npu.max_memory_allocated"),
    ]
    diff = npudoctor("lint", "--diff", tmp_path / "step.py").stdout
    assert "+    x = x.npu(); y = y.npu()\n" in diff


def test_json_findings_carry_the_documented_fields(tmp_path: Path) -> None:
    _code, doc = _lint(tmp_path, "a.py", "model = model.cuda()\n")
    assert doc["schema_version"] == 1 and doc["files"] == 1
    (f,) = doc["findings"]
    assert {k: f[k] for k in ("line", "end_line", "code", "severity")} == {
        "line": 1,
        "end_line": 1,
        "code": "LNT001",
        "severity": "error",
    }
    assert f["path"].endswith("a.py") and f["message"] and f["fix"] == ".npu() or .to(device)"
    assert f["source"] == "model = model.cuda()"


def test_silent_after_npu_early_return_and_in_npu_guarded_chains(tmp_path: Path) -> None:
    text = (
        "import torch\n"
        "def f(x):\n"
        "    if torch.npu.is_available():\n"
        "        return x.npu()\n"
        "    return x.cuda()\n"
        "if is_npu_available():\n"
        "    d = 'npu'\n"
        "elif torch.cuda.is_available():\n"
        "    d = 'cuda'\n"
        "x = 'npu' if is_npu() else 'cuda'\n"
        "y = x.cuda()\n"
    )
    code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(1, "LNT023"), (11, "LNT001")]


def test_strings_in_docstrings_logs_and_comparisons_are_not_code(tmp_path: Path) -> None:
    text = (
        '"""Runs on cuda:0 with nccl."""\n'
        "import logging\n"
        "logging.info('on cuda:0')\n"
        "print('nccl')\n"
        "if t.device.type == 'cuda':\n"
        "    pass\n"
        "# x.cuda()\n"
    )
    code, doc = _lint(tmp_path, "a.py", text)
    assert (code, doc["findings"]) == (0, [])


def test_cuda_availability_fallback_is_one_finding_and_its_body_is_silent(tmp_path: Path) -> None:
    text = "import torch\nif torch.cuda.is_available():\n    m = m.cuda()\nd = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    _code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(1, "LNT023"), (2, "LNT009"), (4, "LNT009")]


def test_amp_advice_follows_the_torch_npu_line(tmp_path: Path) -> None:
    text = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
    _c, new = _lint(tmp_path, "a.py", text, "--torch-npu", "2.6.0")
    _c, old = _lint(tmp_path, "a.py", text, "--torch-npu", "2.1")
    _c, unknown = _lint(tmp_path, "a.py", text)
    assert _fixes(new, "LNT004") == ['torch.amp.autocast("npu")']
    assert _fixes(old, "LNT004") == ["torch.npu.amp.autocast()"]
    assert "torch_npu version not known" in _fixes(unknown, "LNT004")[0]


_CUSTOM_FUNCTION = (
    "import torch\n"
    "\n"
    "\n"
    "class ScaledSoftmax(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
    "    def forward(ctx, x, scale):\n"
    "        y = torch.softmax(x * scale, dim=-1)\n"
    "        ctx.save_for_backward(y)\n"
    "        return y\n"
    "\n"
    "    @staticmethod\n"
    "    @torch.cuda.amp.custom_bwd\n"
    "    def backward(ctx, grad):\n"
    "        (y,) = ctx.saved_tensors\n"
    "        return y * (grad - (grad * y).sum(-1, keepdim=True)), None\n"
)


def test_amp_decorators_get_a_decorator_by_the_torch_npu_line(tmp_path: Path) -> None:
    _c, new = _lint(tmp_path, "softmax.py", _CUSTOM_FUNCTION, "--torch-npu", "2.6")
    _c, mid = _lint(tmp_path, "softmax.py", _CUSTOM_FUNCTION, "--torch-npu", "2.3")
    _c, unknown = _lint(tmp_path, "softmax.py", _CUSTOM_FUNCTION)
    assert _codes(new) == [(1, "LNT023"), (6, "LNT004"), (13, "LNT004")]
    assert _fixes(new, "LNT004") == [
        'torch.amp.custom_fwd(device_type="npu", cast_inputs=torch.float32)',
        'torch.amp.custom_bwd(device_type="npu")',
    ]
    assert _fixes(mid, "LNT004") == [
        "torch_npu.npu.amp.custom_fwd(cast_inputs=torch.float32)",
        "torch_npu.npu.amp.custom_bwd",
    ]
    assert _fixes(unknown, "LNT004")[1] == (
        'torch.amp.custom_bwd(device_type="npu") with torch_npu >= 2.4, else torch_npu.npu.amp.custom_bwd '
        "(torch_npu version not known: give --torch-npu)"
    )
    assert "cast_inputs" in new["findings"][1]["message"] and "autocast(" not in new["findings"][1]["fix"]
    path = tmp_path / "softmax.py"
    diff = npudoctor("lint", "--diff", "--torch-npu", "2.6", path).stdout
    assert '+    @torch.amp.custom_fwd(device_type="npu", cast_inputs=torch.float32)\n' in diff
    assert '+    @torch.amp.custom_bwd(device_type="npu")\n' in diff


_FP32_EVAL = (
    "import torch\n"
    "\n"
    "\n"
    "def evaluate(model, loader):\n"
    "    model.eval()\n"
    "    with torch.no_grad(), torch.cuda.amp.autocast(enabled=False):\n"
    "        return [model(x.float()) for x in loader]\n"
    "\n"
    "\n"
    "def train_step(model, batch, scaler):\n"
    "    with torch.cuda.amp.autocast(True, torch.bfloat16):\n"
    "        loss = model(batch)\n"
    "    scaler.scale(loss).backward()\n"
    "\n"
    "\n"
    "scaler = torch.cuda.amp.GradScaler(2.0**14, growth_interval=500)\n"
    "fwd = torch.cuda.amp.custom_fwd(forward_impl, cast_inputs=torch.float32)\n"
)


def test_amp_replacements_keep_the_arguments_of_the_call(tmp_path: Path) -> None:
    _c, new = _lint(tmp_path, "train.py", _FP32_EVAL, "--torch-npu", "2.6")
    _c, old = _lint(tmp_path, "train.py", _FP32_EVAL, "--torch-npu", "2.1")
    _c, unknown = _lint(tmp_path, "train.py", _FP32_EVAL)
    assert _fixes(new, "LNT004") == [
        'torch.amp.autocast("npu", enabled=False)',
        'torch.amp.autocast("npu", enabled=True, dtype=torch.bfloat16)',  # the device comes first: named
        'torch.amp.GradScaler("npu", 2.0**14, growth_interval=500)',
        'torch.amp.custom_fwd(forward_impl, device_type="npu", cast_inputs=torch.float32)',
    ]
    assert _fixes(old, "LNT004")[:2] == [
        "torch.npu.amp.autocast(enabled=False)",
        "torch.npu.amp.autocast(enabled=True, dtype=torch.bfloat16)",
    ]
    assert _fixes(unknown, "LNT004")[0] == (
        'torch.amp.autocast("npu", enabled=False) with torch_npu >= 2.3, else torch.npu.amp.autocast(enabled=False) '
        "(torch_npu version not known: give --torch-npu)"
    )
    assert "not the NPU's" in new["findings"][1]["message"]  # the region was meant to stay float32
    path = tmp_path / "train.py"
    diff = npudoctor("lint", "--diff", "--torch-npu", "2.6", path).stdout
    assert '+    with torch.no_grad(), torch.amp.autocast("npu", enabled=False):\n' in diff
    assert '+    with torch.amp.autocast("npu", enabled=True, dtype=torch.bfloat16):\n' in diff
    assert '+fwd = torch.amp.custom_fwd(forward_impl, device_type="npu", cast_inputs=torch.float32)\n' in diff
    old_diff = npudoctor("lint", "--diff", "--torch-npu", "2.1", path).stdout
    assert "+    with torch.npu.amp.autocast(True, torch.bfloat16):\n" in old_diff  # same parameters: kept as written


def test_transfer_to_npu_silences_what_it_remaps_but_not_its_limits(tmp_path: Path) -> None:
    text = (
        "import torch\nfrom torch_npu.contrib import transfer_to_npu\n"
        "m = m.cuda()\ndist.init_process_group(backend='nccl')\n"
        "if args.backend == 'nccl':\n    pass\ng = torch.jit.script(m)\n"
    )
    _code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(5, "LNT015"), (7, "LNT015")]


def test_unreadable_files_are_one_finding_each_and_never_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(:\n", encoding="utf-8")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    (tmp_path / "nb.ipynb").write_text("{not json", encoding="utf-8")
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    res = npudoctor("lint", "--json", tmp_path)
    doc = json.loads(res.stdout)
    got = sorted((Path(f["path"]).name, f["code"]) for f in doc["findings"])
    assert got == [("bad.py", "LNT016"), ("latin.py", "LNT016"), ("nb.ipynb", "LNT016"), ("nul.py", "LNT016")]
    assert res.returncode == 0  # warnings only
    assert "does not parse at line 1" in next(f["message"] for f in doc["findings"] if f["path"].endswith("bad.py"))


def test_huge_file_is_not_read(tmp_path: Path) -> None:
    from npudoctor.lint import run

    (tmp_path / "big.py").write_bytes(b"x = 1\n" * (run.MAX_FILE_BYTES // 6 + 10))
    _code, doc = _lint(tmp_path, "small.py", "x = 1\n")
    res = npudoctor("lint", "--json", tmp_path / "big.py")
    (f,) = json.loads(res.stdout)["findings"]
    assert f["code"] == "LNT016" and "larger than" in f["message"]


def test_walk_skips_git_venvs_node_modules_and_symlink_loops_and_links_out(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    for d in (".git", "node_modules/pkg", "env", "src"):
        (proj / d).mkdir(parents=True)
    (proj / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    for d in (".git", "node_modules/pkg", "env"):
        (proj / d / "x.py").write_text("m.cuda()\n")
    (proj / "src" / "train.py").write_text("m.cuda()\n")
    os.symlink(str(proj), str(proj / "src" / "loop"))
    outside = tmp_path / "outside.py"
    outside.write_text("m.cuda()\n")
    os.symlink(str(outside), str(proj / "src" / "link.py"))
    res = npudoctor("lint", "--json", proj)
    doc = json.loads(res.stdout)
    assert doc["files"] == 1
    assert [Path(f["path"]).name for f in doc["findings"]] == ["train.py"]


def test_notebook_code_cells_and_shell_magics(tmp_path: Path) -> None:
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["model.cuda()\n"]},
            {"cell_type": "code", "source": ["import torch\n", "%matplotlib inline\n", "m = m.cuda()\n"]},
            {"cell_type": "code", "source": "!nvidia-smi\nx = 1\n"},
        ],
        "nbformat": 4,
    }
    _code, doc = _lint(tmp_path, "n.ipynb", json.dumps(nb))
    got = [(f["cell"], f["line"], f["code"]) for f in doc["findings"]]
    assert got == [(2, 1, "LNT023"), (2, 3, "LNT001"), (3, 1, "LNT014")]


def test_shell_scripts(tmp_path: Path) -> None:
    text = "#!/bin/bash\n# export CUDA_VISIBLE_DEVICES=1\nexport CUDA_VISIBLE_DEVICES=0\nnvidia-smi -L\n"
    code, doc = _lint(tmp_path, "run.sh", text)
    assert _codes(doc) == [(3, "LNT013"), (4, "LNT014")]
    assert doc["findings"][0]["fix"] == "use ASCEND_RT_VISIBLE_DEVICES"


def test_exit_status_strict_and_usage(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text("import torch\nx = torch.load('a.pt')\n")
    assert npudoctor("lint", tmp_path / "w.py").returncode == 0
    assert npudoctor("lint", "--strict", tmp_path / "w.py").returncode == 1
    assert npudoctor("lint", tmp_path / "missing.py").returncode == 2
    assert npudoctor("lint", "--format", "xml", tmp_path / "w.py").returncode == 2
    assert npudoctor("lint", "--torch-npu", "two", tmp_path / "w.py").returncode == 2


def test_text_output_groups_by_file_with_the_source_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("m = m.cuda()\n")
    res = npudoctor("lint", tmp_path)
    lines = res.stdout.splitlines()
    assert lines[0].endswith("a.py")
    assert lines[1].split()[:3] == ["1:5", "error", "LNT001"]
    assert lines[2].strip() == "| m = m.cuda()"
    assert lines[3].strip() == "fix: .npu() or .to(device)"
    assert lines[-1] == "1 error(s), 0 warning(s), 0 note(s) in 1 file."


def test_sarif_is_2_1_0_with_rules_and_regions(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("m = m.cuda()\ndist.init_process_group('nccl')\n")
    doc = json.loads(npudoctor("lint", "--format", "sarif", tmp_path).stdout)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["LNT001", "LNT002"]
    first = run["results"][0]
    assert first["ruleId"] == "LNT001" and first["level"] == "error"
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "endLine": 1, "startColumn": 5}


def test_github_annotations(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import torch\nx = torch.load('a.pt')\n")
    out = npudoctor("lint", "--format", "github", tmp_path / "a.py").stdout
    assert out.startswith("::warning file=") and ",line=2,endLine=2,col=5,title=LNT005::" in out


@pytest.mark.parametrize("code", ["LNT001", "LNT009", "LNT016"])
def test_explain_knows_the_lint_codes(code: str) -> None:
    res = npudoctor("explain", code)
    assert res.returncode == 0 and res.stdout.startswith(code)


def test_knowledge_loads_and_library_entries_resolve() -> None:
    from npudoctor.lint.knowledge import load

    k = load()
    assert k.libraries["flash_attn"].npu_replacement.startswith("torch_npu.npu_fusion_attention")
    assert k.env_var("NCCL_DEBUG") is not None and k.env_var("NCCL_DEBUG").npu == ""  # type: ignore[union-attr]
    assert k.amp_for((2, 6)).autocast == 'torch.amp.autocast("npu")'  # type: ignore[union-attr]


def test_fix_rewrites_only_the_unambiguous_lines_atomically_and_diff_writes_nothing(tmp_path: Path) -> None:
    text = (
        "import torch\n"
        "import torch.distributed as dist\n"
        "m = model.cuda()  # keep\n"
        "dist.init_process_group(backend='nccl')\n"
        "torch.cuda.synchronize()\n"
    )
    path = tmp_path / "t.py"
    path.write_text(text)
    res = npudoctor("lint", "--diff", path)
    assert res.returncode == 1 and "+m = model.npu()  # keep\n" in res.stdout  # a preview: the errors stand
    assert "+dist.init_process_group(backend='hccl')\n" in res.stdout
    assert path.read_text() == text
    res = npudoctor("lint", "--fix", "--json", path)
    fixed = text.replace(".cuda()", ".npu()").replace("'nccl'", "'hccl'")
    assert path.read_text() == fixed.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    assert [f["code"] for f in json.loads(res.stdout)["findings"]] == ["LNT003"]
    assert res.returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.py"]


_DDP_TRAIN = (
    "import os\n"
    "\n"
    "import torch\n"
    "import torch.distributed as dist\n"
    "\n"
    "\n"
    "def main():\n"
    '    dist.init_process_group(backend="nccl")\n'
    '    local_rank = int(os.environ["LOCAL_RANK"])\n'
    "    model = build_model().cuda()\n"
    "    ckpt = torch.load(args.resume)\n"
    "    return local_rank, model, ckpt\n"
)


def test_fixes_that_need_torch_npu_say_to_import_it_once_per_file(tmp_path: Path) -> None:
    _c, doc = _lint(tmp_path, "train.py", _DDP_TRAIN)
    (need,) = [f for f in doc["findings"] if f["code"] == "LNT023"]
    assert (need["line"], need["severity"], need["fixable"]) == (3, "warning", True)
    assert need["fix"] == "import torch_npu  # on the line after import torch"
    assert need["message"].startswith("the NPU fixes on lines 8, 10 need torch_npu, which this file never imports")
    assert "before torch 2.5 `import torch` does not import it" in need["message"]
    path = tmp_path / "train.py"
    res = npudoctor("lint", "--fix", "--json", path)
    assert path.read_text().startswith("import os\n\nimport torch\nimport torch_npu\nimport torch.distributed")
    assert json.loads(res.stdout)["findings"] == []  # the import, .npu(), "hccl" and map_location="cpu" written
    _c, autoload = _lint(tmp_path, "again.py", _DDP_TRAIN, "--torch-npu", "2.6")
    (note,) = [f for f in autoload["findings"] if f["code"] == "LNT023"]
    assert (note["severity"], note["fixable"]) == ("info", False)
    assert "torch 2.6 imports it at `import torch` (backend autoload)" in note["message"]
    imported = _DDP_TRAIN.replace("import torch\n", "import torch\nimport torch_npu\n")
    _c, ported = _lint(tmp_path, "ported.py", imported)
    assert "LNT023" not in [f["code"] for f in ported["findings"]]
    _c, cpu_only = _lint(tmp_path, "load.py", "import torch\nstate = torch.load(path)\nx = x.double()\n")
    assert [f["code"] for f in cpu_only["findings"]] == ["LNT005", "LNT019"]  # no fix needs torch_npu


def test_fix_never_writes_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    target.write_text("m = m.cuda()\n")
    os.symlink(str(target), str(tmp_path / "link.py"))
    npudoctor("lint", "--fix", tmp_path / "link.py")
    assert target.read_text() == "m = m.cuda()\n"


def _root_with_torch_npu(root: Path, version: str) -> Path:
    info = root / "usr/local/lib/python3.10/site-packages" / f"torch_npu-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch_npu\nVersion: {version}\n")
    return root


@pytest.mark.parametrize(
    ("version", "fix"), [("2.6.0", 'torch.amp.autocast("npu")'), ("2.1.0.post10", "torch.npu.amp.autocast()")]
)
def test_amp_advice_follows_the_torch_npu_installed_under_root(tmp_path: Path, version: str, fix: str) -> None:
    root = _root_with_torch_npu(tmp_path / "root", version)
    (tmp_path / "a.py").write_text("import torch\nwith torch.cuda.amp.autocast():\n    pass\n")
    res = npudoctor("lint", "--json", "--root", root, tmp_path / "a.py")
    assert _fixes(json.loads(res.stdout), "LNT004") == [fix]
    assert res.stderr == f"npudoctor lint: torch_npu {version} installed\n"


def test_without_torch_npu_under_root_the_advice_states_its_assumption(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "a.py").write_text("import torch\ns = torch.cuda.amp.GradScaler()\n")
    res = npudoctor("lint", "--json", "--root", tmp_path / "root", tmp_path / "a.py")
    assert "torch_npu version not known" in _fixes(json.loads(res.stdout), "LNT004")[0]
    assert res.stderr.startswith("npudoctor lint: torch_npu is not installed on that machine; give --torch-npu")
    both = npudoctor("lint", "--json", "--torch-npu", "2.6", "--root", tmp_path / "root", tmp_path / "a.py")
    assert both.returncode == 0  # the machine does not name the line: --torch-npu does


def _run_with(env_kwargs: Dict[str, Any], *argv: Any) -> Tuple[int, str, str]:
    import io

    from npudoctor.cli import run
    from npudoctor.session.request import Environment

    out, err = io.StringIO(), io.StringIO()
    env = Environment(stdout=out, stderr=err, environ=dict(os.environ), **env_kwargs)
    code = run([str(a) for a in argv], env)
    return code, out.getvalue(), err.getvalue()


def test_progress_on_a_terminal_only_once_the_run_is_slow(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"f{i}.py").write_text("x = 1\n")
    ticks = iter(range(0, 1000, 5))  # each reading of the clock is 5 s later
    _c, _o, err = _run_with({"stderr_isatty": True, "clock": lambda: float(next(ticks))}, "lint", tmp_path)
    assert err == "\rnpudoctor lint: 1 linted\n"
    _c, _o, err = _run_with({"stderr_isatty": True}, "lint", tmp_path)
    assert err == ""
    _c, _o, err = _run_with({"stderr_isatty": False, "clock": lambda: float(next(ticks))}, "lint", tmp_path)
    assert err == ""


def test_a_file_nested_too_deeply_is_one_finding(tmp_path: Path) -> None:
    _code, doc = _lint(tmp_path, "deep.py", "import torch\nx = " + "+".join(["torch.cuda.a"] * 5000) + "\n")
    (f,) = doc["findings"]
    assert f["code"] == "LNT016"


def test_json_output_validates_against_the_committed_schema(tmp_path: Path) -> None:
    import jsonschema

    schema = json.loads((Path(__file__).parents[1] / "docs" / "schema" / "lint.schema.json").read_text())
    nb = {"cells": [{"cell_type": "code", "source": "m = m.cuda()\n"}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    (tmp_path / "bad.py").write_text("def f(:\n")
    (tmp_path / "run.sh").write_text("export NCCL_DEBUG=INFO\n")
    doc = json.loads(npudoctor("lint", "--json", tmp_path).stdout)
    assert len(doc["findings"]) == 3
    jsonschema.validate(doc, schema)


def test_json_launcher_config(tmp_path: Path) -> None:
    text = '{\n  "dist_backend": "nccl",\n  "device": "cuda:1",\n  "env": {"PYTORCH_CUDA_ALLOC_CONF": "x"},\n  "lr": 1\n}\n'
    _code, doc = _lint(tmp_path, "launch.json", text)
    assert _codes(doc) == [(2, "LNT002"), (3, "LNT001"), (4, "LNT013")]
    assert doc["findings"][1]["fix"] == 'use "npu:1"'


def test_fix_adds_map_location_and_rewrites_amp_only_when_the_torch_npu_line_is_known(tmp_path: Path) -> None:
    text = (
        "import torch\n"
        "s = torch.load(path)\n"
        "with torch.cuda.amp.autocast(dtype=torch.float16):\n"
        "    pass\n"
        "scaler = torch.cuda.amp.GradScaler()\n"
    )
    path = tmp_path / "t.py"
    path.write_text(text)
    unknown = npudoctor("lint", "--diff", path).stdout
    assert '+s = torch.load(path, map_location="cpu")\n' in unknown and "+with" not in unknown
    new = npudoctor("lint", "--diff", "--torch-npu", "2.6", path).stdout
    assert '+with torch.amp.autocast("npu", dtype=torch.float16):\n' in new
    assert '+scaler = torch.amp.GradScaler("npu")\n' in new
    old = npudoctor("lint", "--diff", "--torch-npu", "2.1", path).stdout
    assert "+with torch.npu.amp.autocast(dtype=torch.float16):\n" in old
    doc = json.loads(npudoctor("lint", "--json", path).stdout)
    assert [(f["code"], f["fixable"]) for f in doc["findings"]] == [
        ("LNT023", False),  # none of --fix's own rewrites here needs torch_npu: advice
        ("LNT005", True),
        ("LNT004", False),
        ("LNT004", False),
    ]
    synced = json.loads(
        npudoctor("lint", "--json", _write(tmp_path / "s.py", "import torch\ntorch.cuda.synchronize()\n")).stdout
    )
    assert synced["findings"][0]["fixable"] is False  # advice, not rewritten


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _snapshot(tmp_path: Path, chip: str) -> Path:
    doc = {
        "schema_version": 1,
        "created": "2025-01-01T00:00:00Z",
        "node": "n1",
        "target": {},
        "facts": {
            "devices": {"chips": [{"npu_id": 0, "name": chip}]},
            "packages": {"installed": {"torch-npu": [{"name": "torch_npu", "version": "2.1.0.post10"}]}},
        },
    }
    path = tmp_path / f"{chip}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("chip", "expected"), [("910A", ["LNT017", "LNT017", "LNT017"]), ("910B3", [])])
def test_bf16_is_reported_only_on_a_machine_whose_chip_has_none(tmp_path: Path, chip: str, expected: List[str]) -> None:
    (tmp_path / "a.py").write_text("import torch\nx = t.to(torch.bfloat16)\nargs = TrainingArguments(bf16=True)\n")
    (tmp_path / "c.yaml").write_text("bf16: true\n")
    res = npudoctor("lint", "--json", "--from", _snapshot(tmp_path, chip), tmp_path / "a.py", tmp_path / "c.yaml")
    doc = json.loads(res.stdout)
    assert [f["code"] for f in doc["findings"]] == expected
    if expected:
        assert "910A" in doc["findings"][0]["message"]
    plain = json.loads(npudoctor("lint", "--json", tmp_path / "a.py", tmp_path / "c.yaml").stdout)
    assert plain["findings"] == []


def test_ascend_visible_devices_values_the_runtime_reads_only_in_part(tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\n"
        "export ASCEND_RT_VISIBLE_DEVICES=0,1\n"
        'export ASCEND_RT_VISIBLE_DEVICES="1, 2,3"\n'
        "ASCEND_RT_VISIBLE_DEVICES=3,1 python t.py\n"
        "export ASCEND_RT_VISIBLE_DEVICES=$DEVS\n"
    )
    _code, doc = _lint(tmp_path, "run.sh", script)
    assert _codes(doc) == [(3, "LNT018"), (4, "LNT018")]
    assert "the runtime reads only 1" in doc["findings"][0]["message"]
    snap = _snapshot(tmp_path, "910B3")  # one NPU
    res = npudoctor("lint", "--json", "--from", snap, tmp_path / "run.sh")
    found = json.loads(res.stdout)["findings"]
    assert [(f["line"], f["code"]) for f in found] == [(2, "LNT018"), (3, "LNT018"), (4, "LNT018")]
    assert "the machine has 1 NPU(s): the runtime keeps only 0" in found[0]["message"]
    py = _write(tmp_path / "v.py", 'import os\nos.environ["ASCEND_RT_VISIBLE_DEVICES"] = "2,0"\n')
    assert [f["code"] for f in json.loads(npudoctor("lint", "--json", py).stdout)["findings"]] == ["LNT018"]


def test_code_inside_an_f_string_is_linted_even_in_a_log_call(tmp_path: Path) -> None:
    text = (
        "import logging\nimport torch\nlog = logging.getLogger()\n"
        'log.info(f"peak: {torch.cuda.max_memory_allocated() / 1e9:.02f} GB on cuda:0")\n'
        'name = f"{torch.cuda.get_device_name()}"\n'
    )
    _code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(2, "LNT023"), (4, "LNT003"), (5, "LNT003")]
    assert doc["findings"][1]["fix"] == "torch.npu.max_memory_allocated"


def test_cudnn_flags_are_reported_where_set_not_where_read(tmp_path: Path) -> None:
    text = (
        "import torch\nimport torch.backends.cudnn as cudnn\n"
        "if torch.backends.cudnn.benchmark:\n    pass\n"
        "fast = cudnn.deterministic\n"
        "cudnn.benchmark = True\n"
    )
    _code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(6, "LNT006")]


_SEEDED_SETUP = (
    "import random\n"
    "\n"
    "import numpy as np\n"
    "import torch\n"
    "\n"
    "\n"
    "def setup(args):\n"
    "    random.seed(args.seed)\n"
    "    np.random.seed(args.seed)\n"
    "    torch.manual_seed(args.seed)\n"
    "    torch.backends.cudnn.deterministic = False\n"
    "    torch.backends.cudnn.benchmark = True\n"
    "    torch.backends.cuda.matmul.allow_tf32 = True\n"
    "    torch.backends.cudnn.allow_tf32 = False\n"
    "    if args.reproducible:\n"
    "        torch.backends.cudnn.deterministic = True\n"
    "    torch.backends.cudnn.deterministic = args.reproducible\n"
)


def test_cudnn_flag_fixes_follow_the_value_assigned(tmp_path: Path) -> None:
    _c, doc = _lint(tmp_path, "setup.py", _SEEDED_SETUP)
    got = {f["line"]: (f["severity"], f["fix"]) for f in doc["findings"] if f["code"] == "LNT006"}
    hf32 = "HF32 is the NPU's own reduced-precision float32 format, not TF32: check the accuracy"
    assert got == {
        11: ("info", "nothing to do on the NPU: remove it"),  # never asked for determinism
        12: ("warning", "remove it (no effect on the NPU)"),
        13: ("warning", f"torch.npu.matmul.allow_hf32 = True  # torch_npu >= 2.1; {hf32}"),
        14: ("warning", f"torch.npu.conv.allow_hf32 = False  # torch_npu >= 2.1; {hf32}"),  # on by default there
        16: ("warning", "torch.use_deterministic_algorithms(True)"),
        17: ("warning", "torch.use_deterministic_algorithms(args.reproducible)"),
    }
    _c, new = _lint(tmp_path, "setup.py", _SEEDED_SETUP, "--torch-npu", "2.6")
    assert _fixes(new, "LNT006")[2] == f"torch.npu.matmul.allow_hf32 = True  # {hf32}"
    _c, old = _lint(tmp_path, "setup.py", _SEEDED_SETUP, "--torch-npu", "2.0")
    assert _fixes(old, "LNT006")[2] == (
        "remove it: torch_npu 2.0 has no torch.npu.matmul.allow_hf32 (torch_npu 2.1 and later have it)"
    )
    conv_on = _write(tmp_path / "conv.py", "import torch\ntorch.backends.cudnn.allow_tf32 = True\n")
    (f,) = json.loads(npudoctor("lint", "--json", conv_on).stdout)["findings"]
    assert (f["severity"], f["fix"]) == ("info", "nothing to do on the NPU: remove it")
    assert "torch.npu.conv.allow_hf32 is True by default" in f["message"]


def test_cuda_text_searched_or_cut_from_a_string_is_not_a_device(tmp_path: Path) -> None:
    text = (
        "def pick(device):\n"
        '    device = device.replace("cuda:", "").strip()\n'
        '    if device.startswith("cuda"):\n        pass\n'
        '    a, _, b = device.partition("cuda:")\n'
        '    return device.replace("npu", "cuda")\n'
    )
    _code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(6, "LNT001")]


def test_a_cuda_variable_read_with_a_fallback_is_not_reported(tmp_path: Path) -> None:
    text = (
        "import os\n"
        'label = os.getenv("CUDA_VISIBLE_DEVICES", "0")\n'
        'also = os.environ.get("NCCL_DEBUG", "WARN")\n'
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
        'ids = os.environ["CUDA_VISIBLE_DEVICES"].split(",")\n'
    )
    _code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(4, "LNT013"), (5, "LNT013")]


def test_float64_is_reported_where_the_code_asks_for_float64_tensors(tmp_path: Path) -> None:
    text = (
        "import numpy as np\nimport torch\n"
        "a = torch.arange(0, 8, 2, dtype=torch.float64, device=pos.device)\n"
        "b = x.to(torch.double)\n"
        "c = x.double()\n"
        "torch.set_default_dtype(torch.float64)\n"
        "d = np.zeros(3, dtype=np.float64)\n"
        "if x.dtype == torch.float64:\n    pass\n"
        "freqs_dtype = torch.float32 if is_npu else torch.float64\n"
        "e = torch.arange(4, dtype=freqs_dtype)\n"
        "if is_torch_npu_available():\n    f = t.double()\n"
        "g = np.double(3)\n"
    )
    code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(3, "LNT019"), (4, "LNT019"), (5, "LNT019"), (6, "LNT019")]
    assert code == 0  # a warning: which operators take float64 depends on the operator
    assert {f["severity"] for f in doc["findings"]} == {"warning"}
    assert "DT_DOUBLE" in doc["findings"][0]["message"] and "float32" in doc["findings"][0]["fix"]


def test_float64_chosen_into_a_dtype_variable_is_reported_where_it_is_chosen(tmp_path: Path) -> None:
    text = (
        "import torch\n"
        "def rope(ids, dim):\n"
        "    is_mps = ids.device.type == 'mps'\n"
        "    freqs_dtype = torch.float32 if is_mps else torch.float64\n"
        "    a = torch.arange(0, dim, 2, dtype=freqs_dtype)\n"
        "    b = torch.arange(0, dim, 2, dtype=freqs_dtype)\n"
        "    return a, b\n"
        "def acc(preds):\n"
        "    p = preds.detach().cpu().double()\n"
        "    return p\n"
    )
    _code, doc = _lint(tmp_path, "a.py", text)
    assert _codes(doc) == [(4, "LNT019")]
    assert doc["findings"][0]["message"].startswith("torch.float64 makes float64 tensors")
