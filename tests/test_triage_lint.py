"""Triage and lint share their knowledge: a log line caused by a CUDA-ism (signatures.toml
``lint``) names the lint codes whose rules find that CUDA-ism in the user's code, and those
rules do find it."""

from __future__ import annotations

import json
from pathlib import Path

from npudoctor.knowledge import codes
from npudoctor.triage import load_kb
from tests import lintcorpus
from tests.clirun import npudoctor

_LINES = {
    "torch-cuda-not-compiled": (
        b"AssertionError: Torch not compiled with CUDA enabled\n",
        "import torch\nmodel = model.cuda()\n",
        "LNT001",
    ),
    "nccl-not-built": (
        b"RuntimeError: Distributed package doesn't have NCCL built in\n",
        'import torch.distributed as dist\ndist.init_process_group("nccl")\n',
        "LNT002",
    ),
    "cuda-checkpoint-on-npu": (
        b"RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.\n",
        'import torch\nstate = torch.load("ckpt.pt")\n',
        "LNT005",
    ),
    "aclnn-dtype-float64-unsupported": (
        b"EZ1001: self not implemented for DT_DOUBLE, should be in dtype support list [DT_FLOAT16,DT_FLOAT,].\n",
        "import torch\nfreqs = torch.arange(0, 64, 2, dtype=torch.float64)\n",
        "LNT019",
    ),
}


def test_every_lint_code_of_a_signature_is_a_registered_lint_code() -> None:
    named = {e.id: e.lint for e in load_kb().entries if e.lint}
    assert set(_LINES) <= set(named)
    for entry_id, lint_codes in named.items():
        for code in lint_codes:
            assert codes.get(code).area == "lint", (entry_id, code)


def test_a_cuda_ism_line_names_the_lint_rule_that_finds_it_in_the_code(tmp_path: Path) -> None:
    for entry_id, (line, source, code) in _LINES.items():
        log = tmp_path / f"{entry_id}.log"
        log.write_bytes(line)
        res = npudoctor("triage", "--no-facts", "--json", log, text=False)
        (group,) = json.loads(res.stdout)["known"]
        assert group["id"] == entry_id and code in group["lint"]
        text = npudoctor("triage", "--no-facts", log, text=False).stdout.decode()
        assert f"npudoctor lint finds it ({', '.join(group['lint'])})" in text
        assert "\n    $ npudoctor lint .\n" in text
        # and the named rule finds the cause in code that prints this line
        py = tmp_path / f"{entry_id}.py"
        py.write_text(source, encoding="utf-8")
        found = json.loads(npudoctor("lint", "--json", py).stdout)["findings"]
        assert [f["code"] for f in found if f["code"] not in lintcorpus.DERIVED] == [code]


def test_a_line_not_caused_by_code_names_no_lint_rule(tmp_path: Path) -> None:
    log = tmp_path / "oom.log"
    log.write_bytes(b"RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    (group,) = json.loads(npudoctor("triage", "--no-facts", "--json", log, text=False).stdout)["known"]
    assert group["lint"] == []
    assert "npudoctor lint" not in npudoctor("triage", "--no-facts", log, text=False).stdout.decode()


def test_explain_of_a_signature_names_its_lint_codes() -> None:
    res = npudoctor("explain", "nccl-not-built")
    assert "found in the code by `npudoctor lint`: LNT002\n" in res.stdout
    page = json.loads(npudoctor("explain", "--json", "cuda-checkpoint-on-npu").stdout)
    assert page["lint"] == ["LNT005"]
    assert "npudoctor lint" not in npudoctor("explain", "npu-out-of-memory").stdout
