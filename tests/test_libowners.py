"""Owners of the libraries the audit reports, and one LIB001 per root cause naming the
owner's fix (issue 14): a missing libascend_hal.so is the driver's (in a container: mount
the host's driver), never "reinstall the toolkit"."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.facts.runtime_env import FoundAt, Resolution
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.rules._libowners import (
    DRIVER,
    KERNELS,
    NNAL,
    OS,
    TOOLKIT,
    TORCH,
    TORCH_NPU,
    owner,
    owner_of_name,
    owner_of_path,
)
from npudoctor.snapshot import Snapshot

SITE = "/usr/local/lib/python3.10/site-packages"
TNPU = f"{SITE}/torch_npu/lib/libtorch_npu.so"


@pytest.mark.parametrize(
    "path,who",
    [
        ("/usr/local/Ascend/driver/lib64/driver/libascend_hal.so", DRIVER),
        ("/usr/local/Ascend/driver/lib64/common/libc_sec.so", DRIVER),
        ("/usr/local/Ascend/ascend-toolkit/8.0.0/lib64/libascendcl.so", TOOLKIT),
        ("/usr/local/Ascend/ascend-toolkit/latest/opp/vendors/customize/op_api/lib/libcust_opapi.so", KERNELS),
        ("/usr/local/Ascend/nnal/atb/8.0.0/atb/cxx_abi_0/lib/libatb.so", NNAL),
        (f"{SITE}/torch/lib/libc10.so", TORCH),
        (TNPU, TORCH_NPU),
        (f"{SITE}/mooncake/libtransfer_engine.so", "the mooncake wheel"),
        (f"{SITE}/numpy.libs/libopenblas64_p-r0-0cf96a72.3.23.dev.so", "the numpy wheel"),
        ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", OS),
        ("/opt/elsewhere/libfoo.so", None),
    ],
)
def test_owner_by_place(path, who):
    assert owner_of_path(path) == who


@pytest.mark.parametrize(
    "name,who",
    [
        ("libascend_hal.so", DRIVER),
        ("libdrvdsmi_host.so", DRIVER),
        ("libascendcl.so", TOOLKIT),
        ("libhccl.so", TOOLKIT),
        ("libopapi.so", TOOLKIT),
        ("libatb.so", NNAL),
        ("libc10.so", TORCH),
        ("libtorch_cpu.so", TORCH),
        ("libtorch_npu.so", TORCH_NPU),
        ("libstdc++.so.6", OS),
        ("libfoo.so", None),
    ],
)
def test_owner_by_name(name, who):
    assert owner_of_name(name) == who


def test_driver_names_stay_the_drivers_wherever_a_copy_is():
    rec = Resolution(
        name="libascend_hal.so",
        found_at=(FoundAt(path="/usr/local/Ascend/ascend-toolkit/latest/lib64/stub/libascend_hal.so", usable=True),),
    )
    assert owner(rec) == DRIVER
    assert owner(Resolution(name="libfoo.so")) == "unknown"
    assert owner(Resolution(name="libfoo.so", path=f"{SITE}/vendor_pkg/libfoo.so")) == "the vendor_pkg wheel"


def _missing(name: str, by: str = TNPU) -> Dict[str, Any]:
    return {"name": name, "needed_by": [by], "status": "missing", "found_at": []}


def _findings(resolution: List[Dict[str, Any]], container: bool, toolkit: bool = True) -> List[Any]:
    facts: Dict[str, Any] = {
        "host": {"arch": "aarch64"},
        "python": {"machine": "aarch64"},
        "packages": {"installed": {}},
        "libraries": {
            "torch_npu": {"version": "2.1.0.post10", "location": f"{SITE}/torch_npu"},
            "resolution": resolution,
            "loader": {"ld_library_path": []},
        },
        "container": {"in_container": container, "runtime": "docker" if container else None},
    }
    if toolkit:
        facts["cann"] = {"selected": {"path": "/usr/local/Ascend/ascend-toolkit/latest", "version": "8.0.0"}}
    return [f for f in evaluate(Snapshot(facts=facts), load_matrix(), Options()) if f.code == "LIB001"]


def _text(f: Any) -> str:
    return "\n".join([f.title, *f.evidence, *f.fix])


def test_libascend_hal_missing_in_a_container_mounts_the_host_driver():
    (f,) = _findings(
        [_missing("libascend_hal.so", "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so")], True
    )
    text = _text(f)
    assert "NPU driver" in f.title and "not mounted" in f.title
    assert "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro" in text
    assert "reinstall" not in text.lower() and "toolkit (and kernels)" not in text
    assert f.data["owners"] == [DRIVER]


def test_libascend_hal_missing_on_a_host_installs_the_driver():
    (f,) = _findings([_missing("libascend_hal.so")], False)
    assert "not installed on this machine" in f.title
    assert any("Install the NPU driver" in line for line in f.fix)
    assert "reinstall the" not in _text(f).lower()


def test_one_finding_per_owner():
    found = _findings(
        [_missing("libascend_hal.so"), _missing("libdrvdsmi_host.so"), _missing("libc10.so"), _missing("libfoo.so")],
        True,
    )
    by_owner = {tuple(f.data["owners"]): f.data["libraries"] for f in found}
    assert by_owner == {
        (DRIVER,): ["libascend_hal.so", "libdrvdsmi_host.so"],
        (TORCH,): ["libc10.so"],
        ("unknown",): ["libfoo.so"],
    }
    torch = next(f for f in found if f.data["owners"] == [TORCH])
    assert "Reinstall torch" in torch.fix[0]


def test_toolkit_library_missing_still_points_at_the_toolkit():
    (f,) = _findings([_missing("libhccl.so")], False)
    assert f.data["owners"] == [TOOLKIT]
    assert "reinstall the CANN toolkit" in _text(f)
