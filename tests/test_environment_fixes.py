"""The exact fix and evidence text of the ENV findings on the scenario trees: only scripts
that exist in the diagnosed root are sourced, export lines append to the user's lists and
use the diagnosed machine's arch, evidence names lines and paths a human can find."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
from scenario_runner import REPO, prepare, run_check

SCEN = REPO / "tests" / "scenarios"


def _run(name: str, tmp_path: Path) -> Dict[str, Any]:
    run = run_check(prepare(SCEN / name, tmp_path))
    assert run.doc is not None, run.stderr[-2000:]
    return run.doc


def _one(doc: Dict[str, Any], code: str) -> Dict[str, Any]:
    hits = [f for f in doc["findings"] if f["code"] == code]
    assert len(hits) == 1, [f["code"] for f in doc["findings"]]
    return hits[0]


def _all_text(doc: Dict[str, Any], prefix: str) -> List[str]:
    out: List[str] = []
    for f in doc["findings"]:
        if f["code"].startswith(prefix):
            out += [f["title"]] + f["evidence"] + f["fix"]
    return out


def test_no_script_anywhere_aarch64_gets_complete_appending_exports(tmp_path):
    doc = _run("k10-aarch64-cann-8.5-no-set-env-script", tmp_path)
    env = doc["facts"]["environment"]
    assert env["arch"] == "aarch64"
    assert env["set_env_script"] is None
    tk = "/usr/local/Ascend/ascend-toolkit/latest"
    drv = "/usr/local/Ascend/driver"
    f = _one(doc, "ENV001")
    assert f["severity"] == "error"  # torch_npu is installed
    assert f["fix"] == [
        f"export ASCEND_TOOLKIT_HOME={tk}",
        f"export ASCEND_HOME_PATH={tk}",
        f"export ASCEND_OPP_PATH={tk}/opp",
        f"export ASCEND_AICPU_PATH={tk}",
        f"export TOOLCHAIN_HOME={tk}/toolkit",
        f"export LD_LIBRARY_PATH={tk}/lib64:{tk}/lib64/plugin/opskernel:{tk}/lib64/plugin/nnengine:"
        f"{tk}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/aarch64:"
        f"{drv}/lib64:{drv}/lib64/common:{drv}/lib64/driver" + "${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
        f"export PYTHONPATH={tk}/python/site-packages:{tk}/opp/built-in/op_impl/ai_core/tbe"
        + "${PYTHONPATH:+:${PYTHONPATH}}",
        f"export PATH={tk}/bin:{tk}/compiler/ccec_compiler/bin:" + "${PATH}",
        'or: eval "$(npudoctor env)"  # the same variables, computed by npudoctor from the toolkit',
        "For a systemd unit, Ray worker, Slurm job or Kubernetes pod, ~/.bashrc is not read: put these "
        "variables in the unit (Environment=/EnvironmentFile=) or the pod spec (env:), or start the command "
        "under `npudoctor exec --`, which applies them (e.g. `npudoctor exec -- python train.py`).",
    ]
    assert (
        f"no set_env.sh found (looked for {tk}/set_env.sh, /usr/local/Ascend/ascend-toolkit/set_env.sh): "
        "the expected values are the variables CANN's set_env.sh is documented to set"
    ) in f["evidence"]


def test_existing_script_is_sourced_under_its_stable_name_and_arch_is_the_trees(tmp_path):
    doc = _run("multi-cann-8.5-next-to-classic-8.2", tmp_path)
    env = doc["facts"]["environment"]
    assert (env["arch"], env["arch_source"]) == ("aarch64", "the toolkit's install info")
    ld = env["expected"]["added"]["LD_LIBRARY_PATH"]
    assert any(e.endswith("/op_tiling/lib/linux/aarch64") for e in ld)
    assert not any("x86_64" in e for e in ld)
    f = _one(doc, "ENV001")
    assert f["fix"] == [
        "source /usr/local/Ascend/cann/set_env.sh",
        "For a systemd unit, Ray worker, Slurm job or Kubernetes pod, ~/.bashrc is not read: put the "
        "variables in the unit (Environment=/EnvironmentFile=) or the pod spec (env:), or start the command "
        'through bash, e.g. `bash -c \'source /usr/local/Ascend/cann/set_env.sh && exec "$0" "$@"\' '
        "python train.py` (your command and its arguments in place of python train.py).",
    ]
    # the placeholder script sets nothing: said in words, not as a "line 0"
    assert (
        "/usr/local/Ascend/ascend-toolkit/latest/set_env.sh sets neither ASCEND_TOOLKIT_HOME nor "
        "ASCEND_HOME_PATH in a way npudoctor can read: the expected values are the variables CANN's "
        "set_env.sh is documented to set"
    ) in f["evidence"]
    assert not [t for t in _all_text(doc, "ENV") if "line 0" in t or "construct(s)" in t]


def test_stale_other_cann_without_script_gives_the_cleaned_values(tmp_path):
    doc = _run("k10-stale-other-cann", tmp_path)
    stale = _one(doc, "ENV002")
    assert stale["fix"][1:3] == [
        "export ASCEND_OPP_PATH=/usr/local/Ascend/cann-8.5.0/opp",
        "export LD_LIBRARY_PATH=/usr/local/Ascend/cann-8.5.0/lib64:/usr/local/Ascend/driver/lib64:"
        "/usr/local/Ascend/driver/lib64/common/:/usr/local/Ascend/driver/lib64/driver/"
        "  # the current value without /usr/local/Ascend/ascend-toolkit/8.2.RC1/lib64",
    ]
    partial = _one(doc, "ENV003")
    assert partial["title"] == (
        "LD_LIBRARY_PATH lacks the toolkit's lib64/plugin/opskernel and lib64/plugin/nnengine "
        "(/usr/local/Ascend/cann-8.5.0); CANN variables unset: TOOLCHAIN_HOME "
        # no set_env.sh to name: the fix exports what it would have set (both parts of the title)
        "(the toolkit's environment only partly applied)"
    )
    assert partial["fix"] == [
        "export TOOLCHAIN_HOME=/usr/local/Ascend/cann-8.5.0/toolkit",
        "export LD_LIBRARY_PATH=/usr/local/Ascend/cann-8.5.0/lib64/plugin/opskernel:"
        "/usr/local/Ascend/cann-8.5.0/lib64/plugin/nnengine${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
    ]
    assert not [t for t in _all_text(doc, "ENV") if "source /" in t]


@pytest.mark.parametrize("name", ["k08-python-3.12-torch-2.1-no-torch-npu-wheel", "k22-disk-full-cann-cache"])
def test_partial_environment_without_script_is_not_told_to_source_one(name, tmp_path):
    doc = _run(name, tmp_path)
    f = _one(doc, "ENV003")
    tk = "/usr/local/Ascend/ascend-toolkit/latest"
    assert f["fix"] == [
        f"export ASCEND_HOME_PATH={tk}",
        f"export ASCEND_OPP_PATH={tk}/opp",
        f"export ASCEND_AICPU_PATH={tk}",
        f"export TOOLCHAIN_HOME={tk}/toolkit",
    ]
    assert any(e.startswith("no set_env.sh found (looked for ") for e in f["evidence"])


def test_partial_loader_path_title_names_the_driver_directories(tmp_path):
    doc = _run("k14-container-cann-8.5-host-driver-24.1", tmp_path)
    f = _one(doc, "ENV003")
    assert f["title"] == (
        "LD_LIBRARY_PATH lacks the driver's lib64 and lib64/driver (/usr/local/Ascend/driver); "
        "CANN variables unset: ASCEND_AICPU_PATH, TOOLCHAIN_HOME (set_env.sh only partly applied)"
    )
    assert f["fix"] == [
        "source /usr/local/Ascend/cann/set_env.sh",
        "or set only what is missing:",
        "export ASCEND_AICPU_PATH=/usr/local/Ascend/cann-8.5.0",
        "export TOOLCHAIN_HOME=/usr/local/Ascend/cann-8.5.0/toolkit",
        "export LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/driver"
        "${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
    ]


def test_script_of_another_install_is_not_offered(tmp_path):
    # ascend-toolkit/set_env.sh sets up latest (8.2.RC1) while 8.0.0 is in use
    doc = _run("multi-cann-older-selected", tmp_path)
    assert doc["facts"]["environment"]["set_env_script"] is None
    f = _one(doc, "ENV003")
    assert not [x for x in f["fix"] if x.startswith("source")]
    assert "export ASCEND_OPP_PATH=/usr/local/Ascend/ascend-toolkit/8.0.0/opp" in f["fix"]


def test_set_env_candidates_per_layout():
    from npudoctor.cann_env import set_env_candidates

    assert set_env_candidates("/usr/local/Ascend/ascend-toolkit/latest") == [
        "/usr/local/Ascend/ascend-toolkit/latest/set_env.sh",
        "/usr/local/Ascend/ascend-toolkit/set_env.sh",
    ]
    assert set_env_candidates("/usr/local/Ascend/cann-8.5.0/") == [
        "/usr/local/Ascend/cann-8.5.0/set_env.sh",
        "/usr/local/Ascend/cann/set_env.sh",
        "/usr/local/Ascend/ascend-toolkit/set_env.sh",
        "/usr/local/Ascend/set_env.sh",
    ]


def test_toolkit_arch_from_install_info_or_the_one_arch_dir(tmp_path):
    from npudoctor.cann_env import toolkit_arch
    from npudoctor.host import Host

    tk = tmp_path / "usr/local/Ascend/cann-8.5.0"
    (tk / "aarch64-linux").mkdir(parents=True)
    host = Host(root=str(tmp_path), environ={})
    assert toolkit_arch(host, "/usr/local/Ascend/cann-8.5.0") == "aarch64"
    (tk / "x86_64-linux").mkdir()
    assert toolkit_arch(host, "/usr/local/Ascend/cann-8.5.0") is None  # two dirs, no info: unknown
    (tk / "x86_64-linux/ascend_toolkit_install.info").write_text("version=8.5.0\narch=x86_64\n")
    assert toolkit_arch(host, "/usr/local/Ascend/cann-8.5.0") == "x86_64"


def _env_findings(env: Dict[str, Any]) -> List[Any]:
    from npudoctor.context import Options
    from npudoctor.engine import evaluate
    from npudoctor.knowledge.matrix import load_matrix
    from npudoctor.snapshot import Snapshot

    snap = Snapshot(facts={"host": {"arch": "x86_64"}, "packages": {"installed": {}}, "environment": env})
    return [f for f in evaluate(snap, load_matrix(), Options()) if f.code.startswith("ENV")]


def test_nnal_without_its_script_gets_the_abi_directory_exports():
    home = "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1"
    env = {
        "toolkit": None,
        "nnal": {
            "path": "/usr/local/Ascend/nnal/atb",
            "version": "8.2.RC1",
            "script": None,
            "expected_atb_home": home,
            "current_atb_home": None,
            "lib_on_path": False,
        },
    }
    (f,) = _env_findings(env)
    assert f.code == "ENV005"
    assert f.fix[:3] == [
        f"export ATB_HOME_PATH={home}",
        f"export LD_LIBRARY_PATH={home}/lib:{home}/examples:{home}/tests/atbopstest"
        + "${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
        f"export PATH={home}/bin:" + "${PATH}",
    ]
    assert "no set_env.sh in /usr/local/Ascend/nnal/atb: the fix sets what it would set" in f.evidence


def test_snapshot_from_before_fallback_key_reads_line_0_as_the_reason():
    tk = "/usr/local/Ascend/cann-8.5.0"
    env = {
        "toolkit": {"path": tk, "version": "8.5.0", "source": "cann.selected"},
        "sourced": False,
        "missing_vars": ["ASCEND_TOOLKIT_HOME"],
        "expected": {
            "method": "documented",
            "script": f"{tk}/set_env.sh",
            "unsupported": [
                {"line": 0, "text": "the script sets no ASCEND_TOOLKIT_HOME/ASCEND_HOME_PATH"},
                {"line": 7, "text": "function f skipped"},
            ],
            "variables": {"ASCEND_TOOLKIT_HOME": tk},
            "added": {},
        },
    }
    (f,) = _env_findings(env)
    assert f.fix[0] == f"source {tk}/set_env.sh"
    assert f.evidence[2:] == [
        "the script sets no ASCEND_TOOLKIT_HOME/ASCEND_HOME_PATH: the expected values are the variables "
        "CANN's set_env.sh is documented to set",
        f"npudoctor could not interpret 1 line(s) of {tk}/set_env.sh; the first is line 7: function f skipped",
    ]
