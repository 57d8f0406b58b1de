"""``npudoctor lint``: what it reads -- Python sources in the encoding they declare, files
classified by name and content -- and where its outputs say a finding is, on real files
written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from tests.clirun import npudoctor

GBK = '# -*- coding: gbk -*-\n# 训练脚本\nx = "你好"; m = model.cuda()\n'


def _json(*args: Any) -> Dict[str, Any]:
    res = npudoctor("lint", "--json", *args)
    assert res.stderr == ""
    doc: Dict[str, Any] = json.loads(res.stdout)
    doc["returncode"] = res.returncode
    return doc


def _findings(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list(doc["findings"])


# -- encodings (PEP 263) ---------------------------------------------------------------------


def test_a_gbk_source_with_its_coding_declaration_is_linted(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(GBK.encode("gbk"))
    doc = _json(tmp_path / "train.py")
    (f,) = _findings(doc)
    assert (f["code"], f["line"], f["column"]) == ("LNT001", 3, 15)
    assert f["source"] == 'x = "你好"; m = model.cuda()'
    assert doc["returncode"] == 1


def test_a_latin1_source_with_its_coding_declaration_is_linted(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes("# coding: latin-1\ns = 'café'; m.cuda()\n".encode("latin-1"))
    (f,) = _findings(_json(tmp_path / "a.py"))
    assert (f["code"], f["line"], f["column"], f["source"]) == ("LNT001", 2, 13, "s = 'café'; m.cuda()")


def test_columns_count_characters_on_a_line_with_non_ascii_text(tmp_path: Path) -> None:
    (tmp_path / "u.py").write_text('x = "你好"; m = model.cuda()\n', encoding="utf-8")
    (f,) = _findings(_json(tmp_path / "u.py"))
    assert f["column"] == 15


def test_an_unknown_or_wrong_encoding_is_a_counted_warning_that_strict_fails_on(tmp_path: Path) -> None:
    (tmp_path / "bogus.py").write_bytes(b"# -*- coding: bogus -*-\nm.cuda()\n")
    (tmp_path / "bad.py").write_bytes(b"# -*- coding: gbk -*-\nm.cuda()  # \xff\xff\n")
    (tmp_path / "plain.py").write_bytes("# 训练\nm.cuda()\n".encode("gbk"))
    doc = _json(tmp_path)
    got = {Path(f["path"]).name: (f["code"], f["severity"], f["message"]) for f in _findings(doc)}
    assert got == {
        "bad.py": ("LNT016", "warning", "not linted: not gbk as declared (line 2, byte 34)"),
        "bogus.py": ("LNT016", "warning", "not linted: declares the encoding 'bogus', which Python does not know"),
        "plain.py": ("LNT016", "warning", "not linted: not UTF-8 (line 1 or 2) and declares no encoding"),
    }
    assert all("coding:" in f["fix"] for f in _findings(doc))
    assert doc["returncode"] == 0  # warnings: the documented contract
    assert npudoctor("lint", "--strict", tmp_path).returncode == 1
    text = npudoctor("lint", tmp_path).stdout
    assert text.splitlines()[-1] == "0 error(s), 3 warning(s), 0 note(s) in 3 files; 3 not linted (LNT016)."


def test_fix_writes_a_gbk_file_back_in_gbk_and_keeps_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(GBK.encode("gbk"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfm = m.cuda()\n")
    diff = npudoctor("lint", "--diff", tmp_path).stdout
    assert '+x = "你好"; m = model.npu()\n' in diff
    npudoctor("lint", "--fix", tmp_path)
    assert (tmp_path / "train.py").read_bytes() == GBK.replace(".cuda()", ".npu()").encode("gbk")
    assert (tmp_path / "bom.py").read_bytes() == b"\xef\xbb\xbfm = m.npu()\n"


# -- files classified by name and content --------------------------------------------------

DOCKERFILE = """\
# syntax=docker/dockerfile:1
FROM --platform=linux/amd64 nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04 AS build
ENV CUDA_VISIBLE_DEVICES=0
ENV PYTORCH_CUDA_ALLOC_CONF expandable_segments:True
RUN pip install --no-cache-dir torch==2.1.0 \\
    --extra-index-url https://download.pytorch.org/whl/cu121 && \\
    pip install flash-attn==2.5.8 --no-build-isolation
RUN nvidia-smi
FROM nvcr.io/nvidia/pytorch:24.01-py3
"""

REQUIREMENTS = """\
--extra-index-url https://download.pytorch.org/whl/cu121
torch==2.1.0+cu121
nvidia-cudnn-cu12==8.9.2.26
flash-attn>=2.5  # attention
bitsandbytes
cupy-cuda12x
transformers>=4.40
triton
torch-npu==2.1.0
"""


def _where(doc: Dict[str, Any]) -> List[Any]:
    return [(Path(f["path"]).name, f["line"], f["column"], f["code"], f["severity"]) for f in _findings(doc)]


def test_a_dockerfile_is_linted_as_one(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    doc = _json(tmp_path / "Dockerfile")
    assert _where(doc) == [
        ("Dockerfile", 2, 29, "LNT021", "error"),
        ("Dockerfile", 3, 5, "LNT013", "warning"),
        ("Dockerfile", 4, 5, "LNT013", "warning"),
        ("Dockerfile", 6, 31, "LNT020", "error"),
        ("Dockerfile", 7, 17, "LNT020", "error"),
        ("Dockerfile", 8, 5, "LNT014", "error"),
        ("Dockerfile", 9, 6, "LNT021", "error"),
    ]
    base = _findings(doc)[0]
    assert base["message"] == "FROM nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04: NVIDIA's CUDA image"
    assert "quay.io/ascend/cann:<CANN>-" in base["fix"]  # the repository's data names it; no tag is made up
    assert _findings(doc)[4]["message"].startswith("flash-attn is CUDA-only: ")
    assert _findings(doc)[4]["fix"].startswith("on the NPU: torch_npu.npu_fusion_attention")


def test_a_requirements_file_is_linted_for_cuda_only_packages(tmp_path: Path) -> None:
    (tmp_path / "requirements-train.txt").write_text(REQUIREMENTS)
    doc = _json(tmp_path / "requirements-train.txt")
    assert [(f["line"], f["code"], f["severity"]) for f in _findings(doc)] == [
        (1, "LNT020", "error"),
        (2, "LNT020", "error"),
        (3, "LNT020", "warning"),
        (4, "LNT020", "error"),
        (5, "LNT020", "warning"),
        (6, "LNT020", "error"),
    ]
    messages = [f["message"] for f in _findings(doc)]
    assert messages[0] == "the PyTorch CUDA wheel index (cu121): torch resolves to a CUDA build"
    assert messages[1] == "torch==2.1.0+cu121 is a CUDA build (local version +cu121)"
    assert [m.split(" is ")[0] for m in messages[2:]] == [
        "nvidia-cudnn-cu12",
        "flash-attn",
        "bitsandbytes",
        "cupy-cuda12x",
    ]


def test_scripts_without_a_suffix_follow_their_shebang(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1\npip install xformers\n")
    (tmp_path / "train").write_text("#!/usr/bin/env python3\nm = m.cuda()\n")
    (tmp_path / "tool").write_text('#!/usr/bin/perl\nprint "cuda";\n')
    doc = _json(tmp_path / "run", tmp_path / "train")
    assert _where(doc) == [
        ("run", 2, 8, "LNT013", "warning"),
        ("run", 3, 13, "LNT020", "error"),
        ("train", 2, 5, "LNT001", "error"),
    ]
    (f,) = _findings(_json(tmp_path / "tool"))
    assert f["code"] == "LNT016" and f["message"].startswith(
        "not linted: a script for another interpreter (#!/usr/bin/perl)"
    )


def test_a_directory_walk_includes_them_by_name_and_shebang(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile.a3").write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    (tmp_path / "requirements.txt").write_text("flash-attn\n")
    (tmp_path / "constraints.txt").write_text("cupy-cuda12x==13.0\n")
    (tmp_path / "run").write_text("#!/bin/sh\nnvidia-smi\n")
    (tmp_path / "NOTES").write_text("nvidia-smi and flash-attn\n")  # no shebang, no known name: not read
    (tmp_path / "notes.txt").write_text("flash-attn\n")
    doc = _json(tmp_path)
    assert sorted((str(Path(f["path"]).relative_to(tmp_path)), f["code"]) for f in _findings(doc)) == [
        ("constraints.txt", "LNT020"),
        ("docker/Dockerfile.a3", "LNT021"),
        ("requirements.txt", "LNT020"),
        ("run", "LNT014"),
    ]
    assert doc["files"] == 4


def test_k8s_gpu_requests_and_nccl_in_a_command_list(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "spec:\n"
        "  containers:\n"
        "    - name: train\n"
        '      command: ["torchrun", "--backend", "nccl", "train.py"]\n'
        "      args:\n"
        "        - --dist-backend\n"
        '        - "nccl"\n'
        "      resources:\n"
        "        limits:\n"
        "          nvidia.com/gpu: 8\n"
    )
    doc = _json(tmp_path / "job.yaml")
    assert [(f["line"], f["column"], f["code"]) for f in _findings(doc)] == [
        (4, 43, "LNT002"),
        (7, 12, "LNT002"),
        (10, 11, "LNT022"),
    ]
    assert (
        _findings(doc)[2]["fix"]
        == "request the Ascend device plugin's resource (huawei.com/Ascend910: 8 for 910-class NPUs)"
    )


# -- notebooks: where a finding is, in every output form ------------------------------------


def _notebook(tmp_path: Path) -> Path:
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["# training\n"]},
            {
                "cell_type": "code",
                "source": ["%env CUDA_VISIBLE_DEVICES=0\n", "import torch\n", "m = m.cuda()\n", "  !nvidia-smi\n"],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    return path


def test_notebook_findings_carry_their_cell_in_github_and_sarif_output(tmp_path: Path) -> None:
    from tests.sarif_2_1_0 import violations

    path = _notebook(tmp_path)
    github = npudoctor("lint", "--format", "github", path).stdout.splitlines()
    assert (
        github[2]  # after LNT013 (cell 2, line 1) and LNT023 (line 2: import torch, no torch_npu)
        == f"::error file={path},title=LNT001::cell 2, line 3: .cuda() moves to a CUDA device. Fix: .npu() or .to(device)"
    )
    assert not any(",line=" in line for line in github)  # no line of the JSON text is claimed
    doc = json.loads(npudoctor("lint", "--format", "sarif", path).stdout)
    assert violations(doc) == []
    result = doc["runs"][0]["results"][2]
    assert result["message"]["text"] == "cell 2, line 3: .cuda() moves to a CUDA device. Fix: .npu() or .to(device)"
    (location,) = result["locations"]
    assert "region" not in location["physicalLocation"]
    assert location["logicalLocations"] == [{"name": "cell 2"}]
    assert location["properties"] == {"cell": 2, "cellRegion": {"startLine": 3, "endLine": 3, "startColumn": 5}}


def test_notebook_env_magic_is_flagged_and_text_output_shows_the_source(tmp_path: Path) -> None:
    path = _notebook(tmp_path)
    doc = _json(path)
    assert [(f["cell"], f["line"], f["column"], f["code"], f["source"]) for f in _findings(doc)] == [
        (2, 1, 6, "LNT013", "%env CUDA_VISIBLE_DEVICES=0"),
        (2, 2, 1, "LNT023", "import torch"),
        (2, 3, 5, "LNT001", "m = m.cuda()"),
        (2, 4, 4, "LNT014", "!nvidia-smi"),
    ]
    text = npudoctor("lint", path).stdout.splitlines()
    assert text[1:4] == [
        "  cell 2, 1:6  warning  LNT013  CUDA_VISIBLE_DEVICES is read by the CUDA stack only",
        "      | %env CUDA_VISIBLE_DEVICES=0",
        "      fix: use ASCEND_RT_VISIBLE_DEVICES",
    ]
    assert text[8] == "      | m = m.cuda()"


# -- --diff and --fix ------------------------------------------------------------------------


def test_diff_is_a_preview_with_the_documented_exit_status(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("m = m.cuda()\n")
    res = npudoctor("lint", "--diff", tmp_path / "a.py")
    assert res.stdout.endswith("-m = m.cuda()\n+m = m.npu()\n")
    assert res.returncode == 1  # "1 errors": the preview wrote nothing, the error stands
    assert (tmp_path / "a.py").read_text() == "m = m.cuda()\n"
    (tmp_path / "w.py").write_text("import torch\nx = torch.load('a.pt')\n")
    assert npudoctor("lint", "--diff", tmp_path / "w.py").returncode == 0
    assert npudoctor("lint", "--diff", "--strict", tmp_path / "w.py").returncode == 1


def test_fix_with_diff_or_diff_with_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("m = m.cuda()\n")
    res = npudoctor("lint", "--fix", "--diff", tmp_path / "a.py")
    assert res.returncode == 2 and "--diff previews the rewrites and writes nothing; --fix writes them" in res.stderr
    assert (tmp_path / "a.py").read_text() == "m = m.cuda()\n"
    assert npudoctor("lint", "--diff", "--json", tmp_path / "a.py").returncode == 2


# -- --torch-npu beside a machine --------------------------------------------------------------


def test_with_a_machine_the_advice_names_what_works_in_that_mode(tmp_path: Path) -> None:
    from tests.test_lint import _root_with_torch_npu

    (tmp_path / "bare").mkdir()
    (tmp_path / "a.py").write_text("import torch\ns = torch.cuda.amp.GradScaler()\n")
    res = npudoctor("lint", "--json", "--root", tmp_path / "bare", tmp_path / "a.py")
    assert res.stderr == (
        "npudoctor lint: torch_npu is not installed on that machine;"
        " give --torch-npu X.Y for the AMP advice of the torch_npu it will run with\n"
    )
    (amp,) = [f for f in json.loads(res.stdout)["findings"] if f["code"] == "LNT004"]
    assert "give --torch-npu" in amp["fix"]
    res = npudoctor("lint", "--json", "--torch-npu", "2.6", "--root", tmp_path / "bare", tmp_path / "a.py")
    assert res.stderr == "npudoctor lint: torch_npu is not installed on that machine; AMP advice for --torch-npu 2.6\n"
    (amp,) = [f for f in json.loads(res.stdout)["findings"] if f["code"] == "LNT004"]
    assert amp["fix"] == 'torch.amp.GradScaler("npu")'
    root = _root_with_torch_npu(tmp_path / "root", "2.1.0")
    res = npudoctor("lint", "--torch-npu", "2.6", "--root", root, tmp_path / "a.py")
    assert res.returncode == 2
    assert "--torch-npu 2.6: that machine says torch_npu 2.1.0 installed; the AMP advice follows it" in res.stderr


# -- hostile file names --------------------------------------------------------------------------


def test_control_characters_in_file_names_keep_the_text_output_one_line_per_file(tmp_path: Path) -> None:
    (tmp_path / "a\nFAKE.py").write_text("m = m.cuda()\n")
    (tmp_path / "b\t\x1b[2Jc.py").write_text("m = m.cuda()\n")
    lines = npudoctor("lint", tmp_path).stdout.splitlines()
    headers = [line for line in lines if not line.startswith(" ") and line and "error(s)" not in line]
    assert headers == [f"{tmp_path}/a\\u000aFAKE.py", f"{tmp_path}/b\\u0009\\u001b[2Jc.py"]
    assert len(lines) == 11  # 4 lines a file, a blank line after each, the summary
