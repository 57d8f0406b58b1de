"""npu-smi mounted from the host into an image without CANN: the loader cannot find the
driver's libc_sec.so / libdrvdsmi_host.so.  That is a loader-path problem of the driver's
libraries (issue 14), not a driver-module one: DEV004 says so and gives the loader path
(and, in a container, the driver mount) -- never `lsmod`."""

from __future__ import annotations

import os
import subprocess
from typing import Any, Dict

import pytest
from builders.elfbuild import elf_world_fixture  # noqa: F401  (session fixture elf_world)

from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.parsers.npu_smi import parse_error
from npudoctor.snapshot import Snapshot


def _real_loader_output(elf_world) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run([str(elf_world["npu_smi"]), "info"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 127
    return proc.stdout + proc.stderr


def test_parse_error_recognises_the_loader(elf_world):
    err = parse_error(_real_loader_output(elf_world))
    assert err is not None and err["cause"] == "loader" and err["library"] == "libc_sec.so"


def _dev004(elf_world, container: bool):
    err = parse_error(_real_loader_output(elf_world))
    assert err is not None
    facts: Dict[str, Any] = {
        "host": {"arch": "x86_64"},
        "devices": {
            "npu_smi": {
                "path": "/usr/local/bin/npu-smi",
                "error": err["message"],
                "cause": err["cause"],
                "message": err["message"],
            }
        },
        "container": {"in_container": container, "runtime": "docker" if container else None},
    }
    hits = [f for f in evaluate(Snapshot(facts=facts), load_matrix(), Options()) if f.code == "DEV004"]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.mark.parametrize("container", [False, True])
def test_dev004_is_a_loader_path_problem_of_the_driver_libraries(elf_world, container):
    f = _dev004(elf_world, container)
    text = "\n".join([f.title, *f.evidence, *f.fix])
    assert "libc_sec.so" in f.title and "loader path" in f.title
    assert "not a driver-module one" in text
    assert "lsmod" not in text
    assert any(line.startswith("export LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:") for line in f.fix)
    assert any("/etc/ld.so.conf.d/" in line and "ldconfig" in line for line in f.fix)
    assert ("-v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro" in text) is container
