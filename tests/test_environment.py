"""cann_env.expected_environment and the environment probe/rules on real trees."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from clirun import npudoctor

from npudoctor.cann_env import expected_environment
from npudoctor.facts import Facts
from npudoctor.host import Host
from npudoctor.rules._env_vars import missing_paths, sourced, variable_state

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE = FIXTURES / "set_env_toolkit_8.0.0.sh.txt"


def _classic(root: Path, version: str = "8.0.0") -> None:
    tk = root / "usr/local/Ascend/ascend-toolkit" / version
    for sub in ("lib64/plugin/opskernel", "lib64/plugin/nnengine", "python/site-packages/tbe", "opp", "x86_64-linux"):
        (tk / sub).mkdir(parents=True, exist_ok=True)
    (tk / "x86_64-linux/ascend_toolkit_install.info").write_text(
        f"package_name=Ascend-cann-toolkit\nversion={version}\narch=x86_64\nos=linux\npath=/usr/local/Ascend/ascend-toolkit/{version}/x86_64-linux\n"
    )
    latest = root / "usr/local/Ascend/ascend-toolkit/latest"
    if not latest.is_symlink():
        os.symlink(version, latest)
    shutil.copy(SAMPLE, root / "usr/local/Ascend/ascend-toolkit/set_env.sh")
    for sub in ("lib64/common", "lib64/driver"):
        (root / "usr/local/Ascend/driver" / sub).mkdir(parents=True, exist_ok=True)


def test_expected_from_the_real_script(tmp_path):
    _classic(tmp_path)
    host = Host(root=str(tmp_path), environ={"LD_LIBRARY_PATH": "/opt/lib"})
    exp = expected_environment(host, "/usr/local/Ascend/ascend-toolkit/latest", arch="x86_64")
    assert exp["method"] == "set_env.sh"
    assert exp["script"] == "/usr/local/Ascend/ascend-toolkit/set_env.sh"
    tk = "/usr/local/Ascend/ascend-toolkit/latest"
    assert exp["variables"]["ASCEND_OPP_PATH"] == f"{tk}/opp"
    assert exp["environ"]["LD_LIBRARY_PATH"].endswith(":/opt/lib")
    assert f"{tk}/lib64" in exp["added"]["LD_LIBRARY_PATH"]
    assert "/opt/lib" not in exp["added"]["LD_LIBRARY_PATH"]
    assert exp["added"]["PYTHONPATH"][0] == f"{tk}/python/site-packages"


def test_script_naming_latest_is_rebased_onto_a_versioned_toolkit(tmp_path):
    _classic(tmp_path, "8.0.0")
    _classic(tmp_path, "8.2.RC1")  # latest stays -> 8.0.0
    host = Host(root=str(tmp_path), environ={})
    exp = expected_environment(host, "/usr/local/Ascend/ascend-toolkit/8.2.RC1")
    assert exp["method"] == "set_env.sh (rebased)"
    assert exp["variables"]["ASCEND_TOOLKIT_HOME"] == "/usr/local/Ascend/ascend-toolkit/8.2.RC1"
    assert "/usr/local/Ascend/ascend-toolkit/8.2.RC1/lib64" in exp["added"]["LD_LIBRARY_PATH"]
    assert "/usr/local/Ascend/driver/lib64" in exp["added"]["LD_LIBRARY_PATH"]


def test_documented_fallback_and_driver_path_from_install_info(tmp_path):
    tk = tmp_path / "usr/local/Ascend/cann-8.5.0"
    (tk / "lib64").mkdir(parents=True)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/ascend_install.info").write_text("UserName=HwHiAiUser\nDriver_Install_Path_Param=/opt/Ascend\n")
    host = Host(root=str(tmp_path), environ={"PATH": "/usr/bin"})
    exp = expected_environment(host, "/usr/local/Ascend/cann-8.5.0", arch="aarch64")
    assert exp["method"] == "documented" and exp["script"] is None
    v = exp["variables"]
    assert v["ASCEND_HOME_PATH"] == "/usr/local/Ascend/cann-8.5.0"
    assert v["ASCEND_OPP_PATH"] == "/usr/local/Ascend/cann-8.5.0/opp"
    assert exp["added"]["LD_LIBRARY_PATH"][:3] == [
        "/usr/local/Ascend/cann-8.5.0/lib64",
        "/usr/local/Ascend/cann-8.5.0/lib64/plugin/opskernel",
        "/usr/local/Ascend/cann-8.5.0/lib64/plugin/nnengine",
    ]
    assert "/opt/Ascend/driver/lib64/common" in exp["added"]["LD_LIBRARY_PATH"]
    assert (
        exp["environ"]["PATH"]
        == "/usr/local/Ascend/cann-8.5.0/bin:/usr/local/Ascend/cann-8.5.0/compiler/ccec_compiler/bin:/usr/bin"
    )


def test_nnal_abi_directory(tmp_path):
    _classic(tmp_path)
    for abi in ("cxx_abi_0", "cxx_abi_1"):
        (tmp_path / f"usr/local/Ascend/nnal/atb/latest/atb/{abi}/lib").mkdir(parents=True)
    host = Host(root=str(tmp_path), environ={})
    exp = expected_environment(
        host, "/usr/local/Ascend/ascend-toolkit/latest", nnal_path="/usr/local/Ascend/nnal/atb", cxx11_abi=False
    )
    home = "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_0"
    assert exp["variables"]["ATB_HOME_PATH"] == home
    assert exp["added"]["LD_LIBRARY_PATH"][0] == f"{home}/lib"
    assert exp["nnal"]["abi_dirs"] == ["cxx_abi_0", "cxx_abi_1"]


def _check(root: Path, env: dict) -> dict:
    full = {"PATH": "/usr/bin:/bin", **env}
    proc = npudoctor("check", "--root", str(root), "--json", "--no-commands", env=full)
    return json.loads(proc.stdout)


def test_probe_sourced_environment_is_clean(tmp_path):
    _classic(tmp_path)
    tk = "/usr/local/Ascend/ascend-toolkit/latest"
    from npudoctor.parsers.set_env import evaluate

    values = evaluate(SAMPLE.read_text(), "/usr/local/Ascend/ascend-toolkit/set_env.sh", {}, arch="x86_64").environment(
        {}
    )
    doc = _check(tmp_path, values)
    env = doc["facts"]["environment"]
    assert env["toolkit"]["path"] == tk
    facts = Facts(doc["facts"])
    assert sourced(facts.environment) is True
    state = variable_state(facts.environment, facts.cann)
    assert state.missing_vars == [] and state.stale == [] and missing_paths(facts.environment) == {}
    assert not [f for f in doc["findings"] if f["area"] == "environment"]


def test_probe_partial_and_stale(tmp_path):
    _classic(tmp_path)
    (tmp_path / "usr/local/Ascend/ascend-toolkit/7.0.RC1/lib64").mkdir(parents=True)
    (tmp_path / "usr/local/Ascend/ascend-toolkit/7.0.RC1/x86_64-linux").mkdir(parents=True)
    (tmp_path / "usr/local/Ascend/ascend-toolkit/7.0.RC1/x86_64-linux/ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=7.0.RC1\narch=x86_64\n"
    )
    tk = "/usr/local/Ascend/ascend-toolkit/latest"
    doc = _check(
        tmp_path,
        {
            "ASCEND_TOOLKIT_HOME": tk,
            "ASCEND_HOME_PATH": tk,
            "LD_LIBRARY_PATH": f"/usr/local/Ascend/ascend-toolkit/7.0.RC1/lib64:{tk}/lib64",
            "ASCEND_OPP_PATH": "/data/custom/opp",
        },
    )
    facts = Facts(doc["facts"])
    state = variable_state(facts.environment, facts.cann)
    assert [s["value"] for s in state.stale] == ["/usr/local/Ascend/ascend-toolkit/7.0.RC1/lib64"]
    assert state.stale[0]["version"] == "7.0.RC1"
    assert "/usr/local/Ascend/driver/lib64/common" in missing_paths(facts.environment)["LD_LIBRARY_PATH"]
    assert f"{tk}/python/site-packages" in missing_paths(facts.environment)["PYTHONPATH"]
    assert state.differs == [{"name": "ASCEND_OPP_PATH", "expected": f"{tk}/opp", "current": "/data/custom/opp"}]
    codes = {f["code"] for f in doc["findings"]}
    assert {"ENV002", "ENV003", "ENV004", "ENV006"} <= codes
    assert "ENV001" not in codes


def _sourced_values() -> dict:
    from npudoctor.parsers.set_env import evaluate

    return evaluate(SAMPLE.read_text(), "/usr/local/Ascend/ascend-toolkit/set_env.sh", {}, arch="x86_64").environment(
        {}
    )


def test_missing_ld_library_path_dir_is_a_note_when_the_toolkit_is_fully_on_the_path(tmp_path):
    """Exactly one problem: set_env.sh of the toolkit in use fully applied, plus a LD_LIBRARY_PATH
    entry of a removed CANN (7.0.0, no such directory).  Nothing can load from it: a note (info),
    not an error (issue 13, item 6)."""
    _classic(tmp_path)
    values = _sourced_values()
    gone = "/usr/local/Ascend/ascend-toolkit/7.0.0/lib64"
    assert not (tmp_path / gone.lstrip("/")).exists()
    values["LD_LIBRARY_PATH"] = values["LD_LIBRARY_PATH"] + ":" + gone
    doc = _check(tmp_path, values)
    env_findings = [f for f in doc["findings"] if f["area"] == "environment"]
    assert [(f["code"], f["severity"]) for f in env_findings] == [("ENV002", "info")]
    (note,) = env_findings
    assert gone in note["title"] and "does not exist" in note["title"] and "fully on the path" in note["title"]
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


def test_missing_ld_library_path_dir_stays_an_error_when_the_toolkit_is_not_fully_on_the_path(tmp_path):
    """The boundary: the same dead entry while the driver's directories are missing from
    LD_LIBRARY_PATH keeps ENV002 an error (the toolkit in use is not fully on the path)."""
    _classic(tmp_path)
    values = _sourced_values()
    gone = "/usr/local/Ascend/ascend-toolkit/7.0.0/lib64"
    kept = [p for p in values["LD_LIBRARY_PATH"].split(":") if "/driver/" not in p]
    values["LD_LIBRARY_PATH"] = ":".join(kept + [gone])
    doc = _check(tmp_path, values)
    codes = {(f["code"], f["severity"]) for f in doc["findings"]}
    assert ("ENV002", "error") in codes and ("ENV003", "warning") in codes
