#!/usr/bin/env python3
"""Rebuild ``examples/``: real broken environments a newcomer can run npudoctor on.

Each example starts from the healthy 8 x 910B3 container of
``tests/scenarios/health-910b3-8npu-healthy`` (real npu-smi capture, CANN 8.0.0
install info and set_env.sh, driver version.info, torch 2.1.0 + torch_npu 2.1.0.post10)
and changes exactly one thing, taken from a real failure report (each example names its
source).  Every example is a scenario (scenario.toml + root/ + bin/)
so the test suite runs it, plus an ``env`` file for ``--env-file``::

    cd examples/numpy-2-with-cann-8.0
    PATH=$PWD/bin:$PATH npudoctor check --root root --env-file env

Usage: ``python scripts/build_examples.py`` (rewrites examples/ from scratch).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Callable, Dict, List

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
BASE = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
OUT = REPO / "examples"
SITE = "root/usr/local/lib/python3.10/site-packages"
FIXTURES = REPO / "tests" / "fixtures"


def _dist_info(example: Path, name: str, version: str, requires: List[str] = ()) -> None:
    target = example / SITE / f"{name}-{version}.dist-info"
    target.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (target / "METADATA").write_text("\n".join(lines) + "\n")
    (target / "INSTALLER").write_text("pip\n")


def _drop(example: Path, dist_info: str) -> None:
    shutil.rmtree(example / SITE / dist_info)


def numpy_2(example: Path) -> None:
    _drop(example, "numpy-1.26.4.dist-info")
    _dist_info(example, "numpy", "2.1.0")
    _dist_info(example, "opencv-python-headless", "4.11.0.86", ["numpy>=2; python_version >= '3.9'"])


def torch_mismatch(example: Path) -> None:
    _drop(example, "torch-2.1.0.dist-info")
    _dist_info(example, "torch", "2.3.1", ["filelock", "sympy", "networkx", "jinja2", "fsspec"])


def npu_busy(example: Path) -> None:
    capture = "error_npu-smi_dcmi-8005_in-container_g_conLogLevel.txt"
    shutil.copy(FIXTURES / capture, example / "bin" / capture)
    script = example / "bin" / "npu-smi"
    script.write_text(
        "#!/bin/sh\n"
        f"# replays tests/fixtures/{capture} (vllm-project/vllm-ascend#2698)\n"
        f'cat "$(dirname "$0")/{capture}"\n'
        "exit 255\n"
    )
    script.chmod(0o755)


def unsourced(example: Path) -> None:
    """Nothing on disk changes: the environment file simply lacks the CANN variables."""


EXAMPLES: Dict[str, Dict[str, object]] = {
    "healthy-910b3": {
        "title": "a healthy container on an 8 x 910B3 node (CANN 8.0.0, torch_npu 2.1.0.post10)",
        "source": "npu-smi capture: vllm-project/vllm-ascend#198; CANN files: ../shared/samples",
        "change": lambda e: None,
        # numpy 1.26.4 is inside the < 2 CANN 8.0.0 needs but newer than the 1.19.2-1.24 its
        # install guide names: "not documented either way", an info (grades grid row nc-03)
        "expect": {
            "exit": 0,
            "absent": ["ENV001", "PKG001", "DEV002"],
            "finding": [
                {
                    "severity": ["info"],
                    "grade": "undocumented",
                    "match": ["numpy 1\\.26\\.4", "CANN 8\\.0\\.0", "not documented either way"],
                    "source": "issue 13 grid nc-03: CANN 8.0.0 install guide names numpy 1.19.2-1.24 (tested); "
                    "1.26.4 is below 2, no statement either way",
                }
            ],
        },
    },
    "set-env-not-sourced": {
        "title": "CANN 8.0.0 installed, set_env.sh never sourced: import torch_npu fails on libhccl.so",
        "source": "cases.md K10 (BytePioneer-AI/PaddleOCR-NPU#7, vllm-project/vllm-ascend#262)",
        "change": unsourced,
        "sourced": False,
        "expect": {"exit": 1, "codes": ["ENV001"]},
    },
    "numpy-2-with-cann-8.0": {
        "title": "opencv-python-headless pulled numpy 2.1.0 in; CANN 8.0.0 needs numpy < 2 (error 500001)",
        "source": "cases.md K07 (vllm-project/vllm-ascend#1875)",
        "change": numpy_2,
        "expect": {"exit": 1, "codes": ["PKG007"]},
    },
    "torch-npu-torch-mismatch": {
        "title": "torch upgraded to 2.3.1 under torch_npu 2.1.0.post10 (undefined symbol in libtorch_npu.so)",
        "source": "cases.md K01",
        "change": torch_mismatch,
        "expect": {"exit": 1, "codes": ["PKG001"]},
    },
    "npu-busy-in-container": {
        "title": "npu-smi in the container: dcmi module initialize failed. ret is -8005",
        "source": "cases.md K15 (vllm-project/vllm-ascend#2698)",
        "change": npu_busy,
        "expect": {"exit": 1, "codes": ["DEV002"]},
    },
}


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def build() -> List[str]:
    base_spec = tomllib.loads((BASE / "scenario.toml").read_text())
    sourced_env = dict(base_spec["env"])
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()
    built = []
    for name, spec in EXAMPLES.items():
        example = OUT / name
        shutil.copytree(BASE, example, symlinks=True)
        change: Callable[[Path], None] = spec["change"]  # type: ignore[assignment]
        change(example)
        env = sourced_env if spec.get("sourced", True) else {"HOME": sourced_env.get("HOME", "/root")}
        lines = ["[scenario]", f"title = {_toml_value(spec['title'])}", f"source = {_toml_value(spec['source'])}", ""]
        lines += ["[env]"] + [f"{k} = {_toml_value(v)}" for k, v in env.items()] + ["", "[expect]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in spec["expect"].items()]  # type: ignore[union-attr]
        (example / "scenario.toml").write_text("\n".join(lines) + "\n")
        (example / "env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        built.append(name)
    return built


if __name__ == "__main__":
    for name in build():
        print(f"examples/{name}")
    sys.exit(0)
