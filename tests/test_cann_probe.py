"""The cann probe against real directory trees (built from tests/fixtures samples by
tests/builders/build_cann_scenarios.py helpers), including bad input: truncated, garbled,
non-UTF-8 and unreadable info files, symlink loops and an empty root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders.build_cann_scenarios import AS, cann85, classic_toolkit, fixture, link, mkdir, nnal, write
from clirun import npudoctor

from npudoctor.context import Options, ProbeContext
from npudoctor.host import Host
from npudoctor.probes import cann as cann_probe

REPO = Path(__file__).resolve().parent.parent


def run_probe(root: Path, env=None):
    host = Host(str(root), environ=dict(env or {"HOME": "/root"}), commands=False)
    return cann_probe.probe(ProbeContext(host=host, options=Options(), facts={}))


def test_classic_latest_symlink_layout(tmp_path):
    classic_toolkit(
        tmp_path,
        "8.2.RC1",
        "ascend_toolkit_install_8.2.RC1_aarch64.info",
        toolkit_info="toolkit_version.info_8.2.RC1_component.txt",
        opp_kernel_info="opp_kernel_version.info_8.2.RC1.txt",
        kernels=["ascend910b", "ascend310p"],
    )
    facts = run_probe(tmp_path)
    assert len(facts["toolkits"]) == 1  # latest/ and 8.2.RC1/ are one install
    tk = facts["toolkits"][0]
    assert tk["path"] == "/usr/local/Ascend/ascend-toolkit/latest"
    assert tk["resolved"] == "/usr/local/Ascend/ascend-toolkit/8.2.RC1"
    assert tk["version"] == "8.2.RC1"
    assert tk["source"] == "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info"
    assert tk["inner_version"] == "V100R001C22SPC001B231"
    assert tk["arch"] == "aarch64" and tk["kind"] == "toolkit"
    assert tk["kernels"]["socs"] == ["ascend310p", "ascend910b"]
    assert tk["kernels"]["configs"] == ["ascend310p", "ascend910b"]
    assert tk["kernels"]["version"] == "8.2.RC1"
    assert tk["kernels"]["source"].endswith("/latest/opp_kernel/version.info")
    assert "/usr/local/Ascend/ascend-toolkit/8.2.RC1" in tk["aliases"]
    assert tk["set_env"] == "/usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert tk["errors"] == []
    assert facts["selected"]["path"] == tk["path"] and facts["selected_via"] == "default"


def test_env_var_wins_and_home_install(tmp_path):
    classic_toolkit(tmp_path, "8.0.0", "ascend_toolkit_install_8.0.0_aarch64.info")
    classic_toolkit(
        tmp_path,
        "7.0.RC1",
        "ascend_toolkit_install_7.0.RC1_310B_arm64-linux.info",
        base="home/u1/Ascend/ascend-toolkit",
    )
    facts = run_probe(tmp_path, {"HOME": "/home/u1", "ASCEND_TOOLKIT_HOME": "/home/u1/Ascend/ascend-toolkit/latest"})
    versions = sorted(t["version"] for t in facts["toolkits"])
    assert versions == ["7.0.RC1", "8.0.0"]
    assert facts["selected"]["version"] == "7.0.RC1"
    assert facts["selected_via"] == "ASCEND_TOOLKIT_HOME"
    assert facts["selected"]["found_via"] == "ASCEND_TOOLKIT_HOME"
    assert facts["env"]["ASCEND_TOOLKIT_HOME"] == {"value": "/home/u1/Ascend/ascend-toolkit/latest", "exists": True}


def test_version_from_version_cfg_when_no_install_info(tmp_path):
    classic_toolkit(tmp_path, "8.0.T63", None, version_cfg="version.cfg_toolkit_8.0.T63_internal-build.txt")
    tk = run_probe(tmp_path)["toolkits"][0]
    assert tk["version"] == "8.0.T63"
    assert tk["source"] == "/usr/local/Ascend/ascend-toolkit/latest/version.cfg"
    assert tk["inner_version"] == "7.6.T13.0.B094"
    assert tk["kernels"]["version"] == "8.0.T63"  # opp_kernel_running_version
    assert tk["components"]["hccl"] == "8.0.T63"


def test_new_85_layout_absolute_links(tmp_path):
    cann85(
        tmp_path,
        "8.5.0",
        "ascend_toolkit_install_8.5.0_new-layout_path-without-arch-suffix.info",
        "opp_version.info_8.5.0_doc.txt",
        kernels=["ascend910_93"],
    )
    facts = run_probe(tmp_path)
    assert len(facts["toolkits"]) == 1
    tk = facts["toolkits"][0]
    assert tk["resolved"] == "/usr/local/Ascend/cann-8.5.0"
    assert tk["kind"] == "cann" and tk["version"] == "8.5.0"
    assert set(tk["aliases"]) >= {"/usr/local/Ascend/cann", "/usr/local/Ascend/cann-8.5.0"}
    assert tk["kernels"]["socs"] == ["ascend910_93"]
    assert tk["versions"]["/usr/local/Ascend/ascend-toolkit/latest/opp/version.info"] == "8.5.0"
    assert facts["selected"]["resolved"] == "/usr/local/Ascend/cann-8.5.0"


def test_sibling_version_dirs_and_nnae(tmp_path):
    classic_toolkit(tmp_path, "8.0.0", "ascend_toolkit_install_8.0.0_aarch64.info")
    mkdir(tmp_path, f"{AS}/ascend-toolkit/8.0")  # stray dir: no toolkit files, not a toolkit
    classic_toolkit(tmp_path, "8.1.RC1", "ascend_toolkit_install_8.1.RC1_aarch64.info", base=f"{AS}/nnae")
    facts = run_probe(tmp_path)
    kinds = sorted((t["kind"], t["version"]) for t in facts["toolkits"])
    assert kinds == [("nnae", "8.1.RC1"), ("toolkit", "8.0.0")]
    assert all(not t["path"].endswith("/8.0") for t in facts["toolkits"])


def test_nnal_and_abi_dirs(tmp_path):
    classic_toolkit(tmp_path, "8.2.RC1", "ascend_toolkit_install_8.2.RC1_aarch64.info")
    nnal(tmp_path, "8.2.RC1", "nnal_atb_version.info_8.2.RC1_indented.txt")
    write(tmp_path, f"{AS}/mindie/latest/version.info", fixture("mindie_version.info_2.1.RC1.txt"))
    facts = run_probe(tmp_path, {"HOME": "/root", "ATB_HOME_PATH": f"/{AS}/nnal/atb/latest/atb/cxx_abi_0"})
    n = facts["nnal"]
    assert n["path"] == "/usr/local/Ascend/nnal/atb"
    assert (n["version"], n["build"]) == ("8.2.RC1", "8.2.RC1.B150")
    assert n["abi_dirs"] == ["cxx_abi_0", "cxx_abi_1"]
    assert n["found_via"] == "ATB_HOME_PATH"
    assert facts["env"]["ATB_HOME_PATH"]["exists"] is True
    assert facts["mindie"]["version"] == "2.1.RC1"


# ------------------------------------------------------------------ bad input


def _info_path(root: Path) -> Path:
    return root / AS / "ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info"


@pytest.mark.parametrize(
    "content,error",
    [
        (b"package_name=Ascend-cann-toolkit\nvers", "no version= line"),
        (b"\x89PNG\r\n\x1a\n\x00\x00garbage", "no version= line"),
        (b"version=8.0.0\xff\xfe\narch=aarch64\n", "not UTF-8"),
        (b"", "no version= line"),
    ],
)
def test_truncated_garbled_non_utf8(tmp_path, content, error):
    classic_toolkit(tmp_path, "8.0.0", "ascend_toolkit_install_8.0.0_aarch64.info")
    _info_path(tmp_path).write_bytes(content)
    tk = run_probe(tmp_path)["toolkits"][0]
    assert any(error in e["error"] for e in tk["errors"]), tk["errors"]
    if content.startswith(b"version=8.0.0"):
        assert tk["version"] is None or tk["version"].startswith("8.0.0")
    else:
        # falls back to the version directory's name, and says where it came from
        assert tk["version"] == "8.0.0"
        assert tk["source"].startswith("directory name")


def test_unreadable_info_file(tmp_path):
    classic_toolkit(tmp_path, "8.0.0", "ascend_toolkit_install_8.0.0_aarch64.info")
    p = _info_path(tmp_path)
    p.unlink()
    p.mkdir()  # a directory where a file belongs: unreadable even for root
    tk = run_probe(tmp_path)["toolkits"][0]
    assert any(e["error"] == "is a directory" for e in tk["errors"])


def test_symlink_loop(tmp_path):
    base = tmp_path / AS / "ascend-toolkit"
    base.mkdir(parents=True)
    link(tmp_path, f"{AS}/ascend-toolkit/latest", "latest")
    link(tmp_path, f"{AS}/cann", "cann-8.5.0")
    link(tmp_path, f"{AS}/cann-8.5.0", "cann")
    facts = run_probe(tmp_path, {"HOME": "/root", "ASCEND_TOOLKIT_HOME": f"/{AS}/ascend-toolkit/latest"})
    assert facts["toolkits"] == []
    assert facts["env"]["ASCEND_TOOLKIT_HOME"]["exists"] is False


def test_empty_root(tmp_path):
    facts = run_probe(tmp_path)
    assert facts["toolkits"] == [] and facts["selected"] is None and facts["nnal"] is None


def _check(root: Path, env=None):
    full = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    full.update(env or {})
    proc = npudoctor("check", "--root", str(root), "--json", env=full)
    return proc, json.loads(proc.stdout)


def test_cli_garbled_tree_reports_findings_not_tracebacks(tmp_path):
    classic_toolkit(tmp_path, "8.0.0", "ascend_toolkit_install_8.0.0_aarch64.info")
    _info_path(tmp_path).write_bytes(b"\xff\xfe\x00garbage\n")
    write(tmp_path, f"{AS}/driver/version.info", b"Ver\xffsion")
    write(tmp_path, "etc/ascend_install.info", b"\x00\x01\x02")
    link(tmp_path, f"{AS}/firmware", "firmware")
    proc, doc = _check(tmp_path)
    assert "Traceback" not in proc.stderr
    codes = {f["code"] for f in doc["findings"]}
    assert "HOST099" not in codes, doc["findings"]
    assert {"CANN010", "DRV004"} <= codes
    cann010 = next(f for f in doc["findings"] if f["code"] == "CANN010")
    assert "ascend_toolkit_install.info" in " ".join(cann010["evidence"])


def test_cli_empty_root_is_calm(tmp_path):
    proc, doc = _check(tmp_path)
    assert proc.returncode == 0
    codes = [f["code"] for f in doc["findings"]]
    assert "HOST050" in codes
    assert not [c for c in codes if c.startswith(("CANN", "DRV"))]


def test_probe_module_contract():
    assert (cann_probe.SECTION, cann_probe.NEEDS, cann_probe.QUICK) == ("cann", (), True)
