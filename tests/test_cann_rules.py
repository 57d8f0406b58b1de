"""CANN rules and the overview helper, on snapshots built from facts the probes produce,
with the bundled matrix."""

from __future__ import annotations

import copy

import pytest

from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.knowledge.packages import kernels_file
from npudoctor.plan.files import cann_packages
from npudoctor.rules._cannfacts import missing_statement_line
from npudoctor.rules.overview import npu_stack_present
from npudoctor.snapshot import Snapshot

TK = {
    "path": "/usr/local/Ascend/ascend-toolkit/latest",
    "resolved": "/usr/local/Ascend/ascend-toolkit/8.0.0",
    "kind": "toolkit",
    "version": "8.0.0",
    "arch": "aarch64",
    "source": "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
    "versions": {},
    "found_via": "/usr/local/Ascend/ascend-toolkit/latest",
    "aliases": ["/usr/local/Ascend/ascend-toolkit/latest"],
    "opp_path": "/usr/local/Ascend/ascend-toolkit/latest/opp",
    "kernels": {"socs": ["ascend910b"], "configs": ["ascend910b"], "version": None, "source": None, "installed": True},
    "errors": [],
    "set_env": "/usr/local/Ascend/ascend-toolkit/set_env.sh",
}


def rec(name, version, **extra):
    out = {"name": name, "version": version, "location": "/usr/lib/python3/site-packages"}
    out.update(extra)
    return out


def snap(
    toolkits=(),
    selected=0,
    packages=None,
    chips=(),
    host_arch="aarch64",
    nnal=None,
    env=None,
    libraries=None,
    python=None,
    driver=None,
):
    tks = [copy.deepcopy(t) for t in toolkits]
    facts = {
        "host": {"arch": host_arch},
        "cann": {
            "toolkits": tks,
            "selected": tks[selected] if tks and selected is not None else None,
            "selected_via": "default",
            "env": env or {},
            "nnal": nnal,
            "nnal_all": [nnal] if nnal else [],
            "searched": ["/usr/local/Ascend/ascend-toolkit"],
        },
        "driver": {"driver": driver or {"exists": False}},
        "packages": {"installed": dict(packages or {})},
        "devices": {"chips": [c if isinstance(c, dict) else {"name": c} for c in chips]},
    }
    if python is not None:
        facts["python"] = python
    if libraries is not None:
        facts["libraries"] = libraries
    return Snapshot(facts=facts)


def codes(s):
    return {f.code: f for f in evaluate(s, load_matrix(), Options())}


@pytest.mark.parametrize(
    "cann,chip,arch,expected",
    [
        ("8.0.0", "910b", "aarch64", "Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run"),
        ("8.0.RC2", "910b", "aarch64", "Ascend-cann-kernels-910b_8.0.RC2_linux.run"),
        ("7.0.0", "310p", "x86_64", "Ascend-cann-kernels-310p_7.0.0_linux.run"),
        ("8.3.RC2", "A3", "x86_64", "Atlas-A3-cann-kernels_8.3.RC2_linux-x86_64.run"),
        ("8.5.0", "910b", "aarch64", "Ascend-cann-910b-ops_8.5.0_linux-aarch64.run"),
        ("9.1.0-beta.3", "A3", "x86_64", "Ascend-cann-A3-ops_9.1.0-beta.3_linux-x86_64.run"),
        # The rule (Ascend-cann-910b-ops_…) and the planner (…kernels…) disagreed here; the
        # official facts side with the planner: REPORT.md §5 "CANN kernels, 8.0.RC3 – 8.3.RC2
        # (and 8.5.0.alphaNNN)", e.g. Ascend-cann-kernels-910b_8.5.0.alpha002_linux-aarch64.run,
        # and the conda channel's legacy cann-kernels-* "up to 8.5.0.alpha002".
        ("8.5.0.alpha001", "910b", "aarch64", "Ascend-cann-kernels-910b_8.5.0.alpha001_linux-aarch64.run"),
        ("8.5.0.alpha001", "A3", "aarch64", "Atlas-A3-cann-kernels_8.5.0.alpha001_linux-aarch64.run"),
    ],
)
def test_kernels_file_names(cann, chip, arch, expected):
    # REPORT.md §5 file-name patterns: one list (knowledge/packages.py) for rules and planner
    assert kernels_file(cann, chip, arch).filename == expected
    assert [p.filename for p in cann_packages(cann, arch, chip, with_nnal=False)][1] == expected


def test_overview_helper():
    assert npu_stack_present(snap()) is False
    assert npu_stack_present(snap(toolkits=[TK])) is True
    assert npu_stack_present(snap(packages={"torch-npu": [rec("torch_npu", "2.7.1")]})) is True
    assert npu_stack_present(snap(chips=["910B3"])) is True
    assert npu_stack_present({"facts": {"driver": {"driver": {"exists": True, "path": "/x"}}}}) is True
    # the typed facts a rule holds (ctx.view), read as they are rather than converted again
    from npudoctor.facts import Facts

    assert npu_stack_present(Facts(snap(toolkits=[TK]).facts)) is True
    assert npu_stack_present(Facts(snap().facts)) is False


def test_plain_machine_only_host050():
    found = codes(snap())
    assert "HOST050" in found
    assert not [c for c in found if c.startswith(("CANN", "DRV"))]


def test_no_cann_with_torch_npu_is_error_with_install_steps():
    s = snap(packages={"torch": [rec("torch", "2.7.1")], "torch-npu": [rec("torch_npu", "2.7.1")]}, chips=["910B3"])
    f = codes(s)["CANN001"]
    assert f.severity == "error"
    assert "HOST050" not in codes(s)
    joined = "\n".join(f.fix)
    assert "Ascend-cann-toolkit_8.3.RC1_linux-aarch64.run --install" in joined
    assert "Ascend-cann-kernels-910b_8.3.RC1_linux-aarch64.run --install" in joined
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in joined


def test_no_cann_with_only_driver_is_info():
    s = snap(chips=["910B3"])
    assert codes(s)["CANN001"].severity == "info"


def test_pairing_paired_compatible_incompatible_unknown():
    pk = {"torch": [rec("torch", "2.7.1")], "torch-npu": [rec("torch_npu", "2.7.1")]}
    tk83 = dict(TK, version="8.3.RC1")
    assert "CANN003" not in codes(snap(toolkits=[tk83], packages=pk))  # paired
    tk80 = dict(TK, version="8.0.0")
    assert "CANN003" not in codes(snap(toolkits=[tk80], packages=pk))  # declared compatible
    tk70 = dict(TK, version="7.0.RC1")
    bad = codes(snap(toolkits=[tk70], packages=pk))["CANN003"]
    assert bad.severity == "error" and "8.3.RC1" in bad.title
    odd = codes(snap(toolkits=[TK], packages={"torch-npu": [rec("torch_npu", "2.7.1.post99")]}))["CANN003"]
    assert odd.severity == "warning" and "matrix" in " ".join(odd.fix).lower()


def test_older_selected_and_t_builds_unordered():
    old = dict(TK)
    new = dict(
        TK, version="8.2.RC1", path="/usr/local/Ascend/ascend-toolkit/8.2.RC1", resolved="/x/8.2.RC1", set_env=None
    )
    f = codes(snap(toolkits=[old, new], selected=0))["CANN002"]
    assert "8.0.0" in f.title and "8.2.RC1" in f.title
    # no set_env.sh next to that toolkit: never tell to source a script that is not there
    # a choice offered, not a repair: the line says so before the command
    assert f.fix == [
        "if you mean to use CANN 8.2.RC1 instead: "
        'export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/8.2.RC1 && eval "$(npudoctor env)"'
        "  # no set_env.sh next to this toolkit: npudoctor computes what it would set"
    ]
    with_script = dict(new, set_env="/usr/local/Ascend/ascend-toolkit/8.2.RC1/set_env.sh")
    assert codes(snap(toolkits=[old, with_script], selected=0))["CANN002"].fix == [
        "if you mean to use CANN 8.2.RC1 instead: source /usr/local/Ascend/ascend-toolkit/8.2.RC1/set_env.sh"
    ]
    assert "CANN002" not in codes(snap(toolkits=[old, new], selected=1))
    tbuild = dict(TK, version="8.0.T63", resolved="/x/t")
    assert "CANN002" not in codes(snap(toolkits=[old, tbuild], selected=0))  # unknowable order


def test_kernels_other_soc_and_version():
    tk = dict(
        TK,
        kernels={
            "socs": ["ascend910b"],
            "configs": ["ascend910b"],
            "version": "8.2.RC1",
            "source": "v.cfg",
            "installed": True,
        },
    )
    found = codes(snap(toolkits=[tk], chips=["310P3"]))
    assert found["CANN005"].severity == "error"
    assert "Ascend-cann-kernels-310p_8.0.0_linux-aarch64.run" in " ".join(found["CANN005"].fix)
    # kernels 8.2.RC1 on toolkit 8.0.0 with no required_package_* ranges to read: not documented
    # either way (issue 13: an error needs an explicit statement), a warning naming its grade
    assert found["CANN006"].severity == "warning" and found["CANN006"].data["grade"] == "undocumented"
    assert "CANN004" not in codes(snap(toolkits=[TK], chips=["910B4"]))


def test_nnal_needed_and_version():
    pk = {"vllm-ascend": [rec("vllm_ascend", "0.9.1")]}
    f = codes(snap(toolkits=[TK], packages=pk))["CANN007"]
    assert "Ascend-cann-nnal_8.0.0_linux-aarch64.run" in " ".join(f.fix)
    # the one vllm-ascend record is one reason, whichever spellings of its name are looked up
    assert [e for e in f.evidence if "vllm_ascend" in e] == [
        "vllm_ascend 0.9.1 is installed (it links NNAL's libatb.so)"
    ]
    assert "CANN007" not in codes(snap(toolkits=[TK]))  # nobody needs it
    nnal = {
        "path": "/usr/local/Ascend/nnal/atb",
        "version": "8.0.0",
        "build": "8.0.0.B010",
        "abi_dirs": ["cxx_abi_0"],
        "errors": [],
    }
    assert "CANN008" not in codes(snap(toolkits=[TK], nnal=nnal))
    nnal_rc = dict(nnal, version="8.2.RC1", build="8.2.RC1.B150")
    # no source states NNAL compatibility across CANN releases (evidence grid ck-10): warning
    f = codes(snap(toolkits=[TK], nnal=nnal_rc))["CANN008"]
    assert f.severity == "warning" and f.data["grade"] == "undocumented"
    nnal_line = dict(nnal, version="8.0.RC3", build="8.0.RC3.B020")  # same 8.0 line: info
    assert codes(snap(toolkits=[TK], nnal=nnal_line))["CANN008"].severity == "info"


def test_atb_abi_against_torch_abi():
    env = {"ATB_HOME_PATH": {"value": "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1", "exists": True}}
    assert "CANN009" not in codes(snap(toolkits=[TK], env=env))  # torch ABI unknown: quiet
    f = codes(snap(toolkits=[TK], env=env, libraries={"torch_cxx11_abi": False}))["CANN009"]
    assert "cxx_abi_0" in f.title
    assert "CANN009" not in codes(snap(toolkits=[TK], env=env, libraries={"torch_cxx11_abi": True}))


def test_arch_mismatch():
    assert codes(snap(toolkits=[TK], host_arch="x86_64"))["CANN011"].fix == [
        "chmod +x Ascend-cann-toolkit_8.0.0_linux-x86_64.run && ./Ascend-cann-toolkit_8.0.0_linux-x86_64.run --install"
    ]


def test_rules_survive_odd_facts():
    weird = Snapshot(
        facts={
            "cann": {"toolkits": [{}], "selected": {"version": None}},
            "driver": {"driver": None},
            "packages": {"installed": []},
        }
    )
    found = evaluate(weird, load_matrix(), Options())
    assert not [f for f in found if f.code == "HOST099"], [f.title for f in found if f.code == "HOST099"]
    found = evaluate(snap(toolkits=[TK]), None, Options())  # no matrix at all
    assert not [f for f in found if f.code == "HOST099"]


CONDA_PY = {"executable": "/opt/conda/envs/npu/bin/python", "version": "3.10.14", "version_info": [3, 10, 14]}


def test_cann003_option_a_keeps_cann_with_paired_torch_npu_then_option_b():
    """k05: torch_npu 2.10.0 (paired with CANN 9.0.0) over CANN 8.0.0, no driver.  Option A
    (keep CANN 8.0.0) comes first: the build the matrix pairs with 8.0.0, with its torch, for
    the target interpreter; option B installs CANN 9.0.0 and names the HDK it needs."""
    pk = {"torch": [rec("torch", "2.10.0")], "torch-npu": [rec("torch_npu", "2.10.0")]}
    found = codes(snap(toolkits=[TK], packages=pk, chips=["910B3"], python=CONDA_PY))
    f = found["CANN003"]
    assert f.title == "torch_npu 2.10.0 does not work with CANN 8.0.0 (it is paired with CANN 9.0.0)"
    assert f.fix == [
        "option A (preferred: keep CANN 8.0.0; torch_npu 2.4.0.post2 is paired with CANN 8.0.0 and built for "
        "torch 2.4.0): /opt/conda/envs/npu/bin/python -m pip install torch==2.4.0 torch-npu==2.4.0.post2",
        "option B (install CANN 9.0.0, the one torch_npu 2.10.0 is paired with): "
        "chmod +x Ascend-cann-toolkit_9.0.0_linux-aarch64.run && ./Ascend-cann-toolkit_9.0.0_linux-aarch64.run --install",
        # the toolkit's environment before the ops installer (vllm-ascend#144)
        "  source /usr/local/Ascend/cann/set_env.sh",
        "  chmod +x Ascend-cann-910b-ops_9.0.0_linux-aarch64.run && ./Ascend-cann-910b-ops_9.0.0_linux-aarch64.run --install",
        "  and the NPU driver + firmware of Ascend HDK 26.0.RC1, which CANN 9.0.0 needs; then reboot",
    ]
    assert f.data["keep_cann"] == {
        "torch_npu": "2.4.0.post2",
        "torch": "2.4.0",
        "fit": "paired",
        "torch_changes": True,
    }
    assert f.data["move_to_cann"] == "9.0.0"
    # DRV001 names the HDK of the CANN that stays and does not contradict option B
    d = found["DRV001"]
    assert "matrix: the CANN 8.0.0 in use is paired with Ascend HDK 24.1.0" in d.evidence
    assert d.fix == [
        "chmod +x Ascend-hdk-910b-npu-driver_24.1.0_linux-aarch64.run && "
        "./Ascend-hdk-910b-npu-driver_24.1.0_linux-aarch64.run --full",
        # the firmware build of HDK 24.1.0 is not published: prose, no `<placeholder>` in a command
        "install the NPU firmware of Ascend HDK 24.1.0 (its .run file name carries its own build number), run with --full",
        "reboot",
        "the HDK above is for the CANN 8.0.0 in use (CANN003 option A); if you move to CANN 9.0.0 for "
        "torch_npu 2.10.0 (CANN003 option B), install Ascend HDK 26.0.RC1 instead",
    ]


def test_cann003_option_a_keeps_torch_when_a_build_exists_x86_driver_facts():
    """torch 2.1.0 + torch_npu 2.1.0.post17 (CANN 8.3.RC1) over CANN 8.0.RC1 on x86_64 with
    driver 24.1.rc2: option A keeps torch (2.1.0.post4 is paired with 8.0.RC1, one pip line);
    option B says the installed driver is too old for CANN 8.3.RC1."""
    tk = dict(TK, version="8.0.RC1", arch="x86_64")
    pk = {"torch": [rec("torch", "2.1.0+cpu")], "torch-npu": [rec("torch_npu", "2.1.0.post17")]}
    drv = {"exists": True, "version": "24.1.rc2", "source": "/usr/local/Ascend/driver/version.info"}
    py = dict(CONDA_PY, machine="x86_64")
    s = snap(toolkits=[tk], packages=pk, host_arch="x86_64", python=py, driver=drv)
    f = codes(s)["CANN003"]
    assert f.fix[0] == (
        "option A (preferred: keep CANN 8.0.RC1 and your torch; torch_npu 2.1.0.post4 is paired with CANN 8.0.RC1): "
        "/opt/conda/envs/npu/bin/python -m pip install torch-npu==2.1.0.post4"
    )
    assert f.fix[1].startswith("option B (install CANN 8.3.RC1, the one torch_npu 2.1.0.post17 is paired with): ")
    # 24.1.rc2 is two HDK releases before 24.1.0, the oldest HDK documented for CANN 8.3.RC1
    # (MindSDK 7.2.RC1): not documented either way, so "older than", not "does not fit" (issue 13)
    assert f.fix[-1] == (
        "  and the NPU driver + firmware of Ascend HDK 25.3.RC1, the one CANN 8.3.RC1 is documented with"
        " (driver 24.1.rc2 is older than every HDK documented for it); then reboot"
    )
    assert len(f.fix) == 5


def test_cann003_option_a_on_x86_changes_torch_from_the_cpu_index_and_flags_the_driver():
    """k10 shape: torch_npu 2.1.0.post10 over CANN 8.5.0 on x86_64, driver 24.1.rc2 (too old
    for 8.5.0, fine for 8.0.0): option A names the driver upgrade it needs (DRV002), option B
    says the driver already fits; DRV002 offers option B concretely."""
    tk = dict(TK, version="8.5.0", arch="x86_64", path="/usr/local/Ascend/cann-8.5.0", set_env=None)
    pk = {"torch": [rec("torch", "2.1.0+cpu")], "torch-npu": [rec("torch_npu", "2.1.0.post10")]}
    drv = {"exists": True, "version": "24.1.rc2", "source": "/usr/local/Ascend/driver/version.info"}
    py = {"executable": "/usr/bin/python3.11", "version_info": [3, 11, 13], "machine": "x86_64"}
    found = codes(snap(toolkits=[tk], packages=pk, host_arch="x86_64", python=py, driver=drv, chips=["310P3"]))
    fix = found["CANN003"].fix
    assert fix[:3] == [
        "option A (preferred: keep CANN 8.5.0; torch_npu 2.9.0 is paired with CANN 8.5.0 and built for torch 2.9.0): "
        "/usr/bin/python3.11 -m pip install torch==2.9.0+cpu --index-url https://download.pytorch.org/whl/cpu",
        "  /usr/bin/python3.11 -m pip install torch-npu==2.9.0",
        # the 8.5.0 release notes list HDK 25.0.X-25.5.X; 24.1.rc2 is older, undocumented (issue 13)
        "  and upgrade the driver 24.1.rc2, which CANN 8.5.0 does not document (older than every HDK it names), "
        "to Ascend HDK 25.5.0 (DRV002)",
    ]
    assert fix[3].startswith("option B (install CANN 8.0.0, the one torch_npu 2.1.0.post10 is paired with): ")
    assert fix[4] == "  source /usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert fix[5] == (
        "  chmod +x Ascend-cann-kernels-310p_8.0.0_linux-x86_64.run && "
        "./Ascend-cann-kernels-310p_8.0.0_linux-x86_64.run --install"
    )
    assert fix[-1] == "  the installed driver 24.1.rc2 already fits CANN 8.0.0"
    d = found["DRV002"]
    assert d.fix == [
        "upgrade this machine's driver: chmod +x Ascend-hdk-310p-npu-driver_25.5.0_linux-x86-64.run && "
        "./Ascend-hdk-310p-npu-driver_25.5.0_linux-x86-64.run --full",
        "then install the NPU firmware of Ascend HDK 25.5.0 (its .run file name carries its own build number), "
        "run with --full; then reboot",
        "or install CANN 8.0.0, the one torch_npu 2.1.0.post10 is paired with (CANN003 option B): "
        "driver 24.1.rc2 supports it",
    ]


def test_package_chip_comes_from_the_current_matrix_never_from_a_stored_family():
    """The package chip type is what the current matrix says of the chip's npu-smi name.  A
    chip name the matrix does not list is unknown, even when an older snapshot stored a
    family for it (probes no longer record what a chip is: rules judge it anew), and no
    chip at all is unknown too: either way the kernels step is prose, never a placeholder."""
    pk = {"torch": [rec("torch", "2.10.0")], "torch-npu": [rec("torch_npu", "2.10.0")]}
    known = {"name": "910B3"}
    fix = codes(snap(toolkits=[TK], packages=pk, chips=[known]))["CANN003"].fix
    assert "  chmod +x Ascend-cann-910b-ops_9.0.0_linux-aarch64.run && " in fix[3]
    stale = {"name": "910B9", "family": "910B"}
    fix = codes(snap(toolkits=[TK], packages=pk, chips=[stale]))["CANN003"].fix
    assert fix[3].startswith("  install the CANN ops package 9.0.0 for this machine's NPU chip type (unknown here")
    fix = codes(snap(toolkits=[TK], packages=pk))["CANN003"].fix
    assert fix[3] == (
        "  install the CANN ops package 9.0.0 for this machine's NPU chip type "
        "(unknown here: no NPU chip of a known type was seen; one of 910b, 910, 310p or A3); for 910b: "
        "chmod +x Ascend-cann-910b-ops_9.0.0_linux-aarch64.run && ./Ascend-cann-910b-ops_9.0.0_linux-aarch64.run --install"
    )


def test_no_verdict_of_absence_on_an_unreadable_cann_section():
    """CANN001/CANN007 say "nothing installed" only from a cann section the view read
    cleanly: a section that is not an object (or has no toolkits list) may hide installs."""
    pk = {"torch-npu": [rec("torch_npu", "2.1.0.post10")], "vllm-ascend": [rec("vllm_ascend", "0.7.3")]}
    good = snap(packages=pk)
    assert {"CANN001", "CANN007"} <= set(codes(good))
    for broken in ("garbage", {"toolkits": "garbage", "nnal_all": []}):
        odd = Snapshot(facts=dict(good.facts, cann=broken))
        found = codes(odd)
        assert "CANN001" not in found and "CANN007" not in found and "HOST099" not in found


def test_the_torch_npu_record_and_target_python_of_the_views():
    """The small reading helpers the CANN and driver rules share (facts/system.py)."""
    from npudoctor.facts import Facts

    view = Facts(
        {
            "packages": {"installed": {"torch_npu": [rec("torch_npu", "2.1.0")], "torch-npu": []}},
            "python": {"version": "3.11.4"},
        }
    )
    assert view.packages.torch_npu is not None and view.packages.torch_npu.version == "2.1.0"
    assert [r.version for r in view.packages.records("torch-npu", "torch_npu")] == ["2.1.0"]
    assert view.python.short == "3.11"
    assert Facts({"python": {"version_info": [3, 9, 1], "version": "3.10.0"}}).python.short == "3.9"
    assert Facts({}).python.short is None and Facts({}).packages.torch_npu is None


def test_cann003_recommends_only_a_build_for_the_installed_torch_or_says_torch_must_change():
    # torch 2.6.0 + torch_npu 2.6.0 (TorchNPU 7.1) on CANN 9.1.0: the builds paired with 9.1.0
    # are all for newer PyTorch lines, so the finding says torch must change, and to what
    pk = {"torch": [rec("torch", "2.6.0")], "torch-npu": [rec("torch_npu", "2.6.0")]}
    f = codes(snap(toolkits=[dict(TK, version="9.1.0")], packages=pk))["CANN003"]
    assert f.data["recommend"] == (
        "2.12.0 with torch 2.12.0 (paired with CANN 9.1.0; no build for torch 2.6.0 is: torch must change to 2.12.0)"
    )
    # a build for the installed torch exists: it is the one named, without a torch change
    m = load_matrix()
    assert m.cann_verdict("2.5.1", "9.2.0", "2.9.0").recommend == "2.9.0.post9 (paired with CANN 9.2.0)"


def test_cann003_names_exactly_what_the_matrix_lacks():
    m = load_matrix()
    row = m.find_torch_npu("2.7.1")
    both = missing_statement_line(m, "2.7.1", "8.5.0", row)
    assert "not in the compatibility matrix" not in both
    assert "has CANN 8.5.0, but the row of torch_npu 2.7.1 does not name it (it lists 8.3.RC1, " in both
    assert "CANN 9.9.0 is not in the compatibility matrix" in missing_statement_line(m, "2.7.1", "9.9.0", row)
    assert "torch_npu 2.99.0 is not in the compatibility matrix" in missing_statement_line(m, "2.99.0", "8.5.0", None)


def test_cann003_accepts_the_dev_build_a_framework_itself_requires():
    tk = dict(TK, version="8.3.RC1")
    dev = {"torch": [rec("torch", "2.7.1")], "torch-npu": [rec("torch_npu", "2.7.1.dev20250724")]}
    alone = codes(snap(toolkits=[tk], packages=dev))["CANN003"]
    assert alone.severity == "warning" and alone.fix == [
        "prefer an official build: torch_npu 2.7.1 (paired with CANN 8.3.RC1)"
    ]
    # vllm-ascend 0.10.x names no torch-npu in its metadata; its versioning policy pins the dev build
    table = dict(dev, **{"vllm-ascend": [rec("vllm_ascend", "0.10.1")]})
    f = codes(snap(toolkits=[tk], packages=table))["CANN003"]
    assert f.severity == "info" and f.fix == [] and f.data["required_by"] == "vllm-ascend 0.10.1"
    assert f.title.startswith("torch_npu 2.7.1.dev20250724 is the unofficial build vllm-ascend 0.10.1 requires")
    # its own Requires-Dist speaks first
    pinned = dict(
        dev, **{"vllm-ascend": [rec("vllm_ascend", "0.99.0", requires_dist=["torch-npu==2.7.1.dev20250724"])]}
    )
    g = codes(snap(toolkits=[tk], packages=pinned))["CANN003"]
    assert g.severity == "info" and "Requires-Dist `torch-npu==2.7.1.dev20250724`" in g.evidence[-1]
    # a framework pinning another build does not excuse this one
    other = dict(dev, **{"vllm-ascend": [rec("vllm_ascend", "0.99.0", requires_dist=["torch-npu==2.7.1"])]})
    assert codes(snap(toolkits=[tk], packages=other))["CANN003"].severity == "warning"


@pytest.mark.parametrize(
    "torch,torch_npu,cann",
    [
        ("2.13.0", "2.13.0", "9.2.0"),  # TorchNPU 26.2.0
        ("2.9.0", "2.9.0.post9", "9.2.0"),  # TorchNPU 26.2.0 release notes
        ("2.12.0", "2.12.0.post2", "9.1.1"),  # TorchNPU 26.1.1: CANN 9.1.X
        ("2.7.1", "2.7.1.post8", "9.2.0"),  # 26.1.X x 9.2.X = Y (26.2.0 notes)
        ("2.9.0", "2.9.0", "9.1.0"),  # 7.3.X x 9.1.X = Y (26.1.0 notes)
    ],
)
def test_official_autumn_2026_stacks_are_no_cann003_finding(torch, torch_npu, cann):
    pk = {"torch": [rec("torch", torch)], "torch-npu": [rec("torch_npu", torch_npu)]}
    assert "CANN003" not in codes(snap(toolkits=[dict(TK, version=cann)], packages=pk))


def test_any_framework_pinning_the_dev_build_makes_it_that_frameworks_requirement():
    # PKG001 and CANN003 both accept a dev torch_npu build that an installed framework's own
    # Requires-Dist pins, whichever framework it is (here MindSpeed), and name it
    tk = dict(TK, version="8.3.RC1")
    dev = {"torch": [rec("torch", "2.7.1")], "torch-npu": [rec("torch_npu", "2.7.1.dev20250724")]}
    alone = codes(snap(toolkits=[tk], packages=dev))
    assert alone["PKG001"].severity == "warning"
    assert alone["PKG001"].fix == ["for a supported stack use torch_npu 2.7.1, the official build of the same base"]
    pin = ["torch-npu==2.7.1.dev20250724; platform_machine == 'aarch64'"]
    pinned = dict(dev, mindspeed=[rec("mindspeed", "0.12.1", requires_dist=pin)])
    found = codes(snap(toolkits=[tk], packages=pinned))
    for code in ("PKG001", "CANN003"):
        f = found[code]
        assert f.severity == "info" and f.fix == [], code
        assert f.title.startswith("torch_npu 2.7.1.dev20250724 is the unofficial build mindspeed 0.12.1 requires"), code
        assert "Requires-Dist `torch-npu==2.7.1.dev20250724" in f.evidence[-1], code
    # a pin on another build, or a range, does not excuse it
    for other in (["torch-npu==2.7.1"], ["torch-npu>=2.7.1.dev20250101"]):
        loose = dict(dev, mindspeed=[rec("mindspeed", "0.12.1", requires_dist=other)])
        assert codes(snap(toolkits=[tk], packages=loose))["PKG001"].severity == "warning", other


def test_triton_ascend_release_made_for_a_newer_cann_is_one_finding_naming_the_right_release():
    # triton-ascend's installation guide: 3.2.0 -> CANN 8.5.0; 3.2.0rc4 -> CANN 8.3.RC2 / 8.3.RC1
    pk = {
        "torch": [rec("torch", "2.7.1")],
        "torch-npu": [rec("torch_npu", "2.7.1")],
        "triton-ascend": [rec("triton_ascend", "3.2.0")],
    }
    f = codes(snap(toolkits=[dict(TK, version="8.3.RC2")], packages=pk))["CANN012"]
    assert f.title == "triton-ascend 3.2.0 needs CANN 8.5.0 or newer, but CANN 8.3.RC2 is in use"
    assert any("install triton-ascend 3.2.0rc4 (made for it)" in str(step) for step in f.fix)
    assert any("triton-lang/triton-ascend docs/en/installation_guide.md" in line for line in f.evidence)
    # the release made for the CANN in use is quiet
    pk["triton-ascend"] = [rec("triton_ascend", "3.2.0rc4")]
    assert "CANN012" not in codes(snap(toolkits=[dict(TK, version="8.3.RC2")], packages=pk))


def test_a_whole_cann_release_is_installed_with_the_toolkit_environment_applied_first():
    """CANN012 installs the release triton-ascend 3.2.0 documents.  The toolkit's set_env.sh
    is sourced right after the toolkit, before the ops and NNAL installers that need it
    (vllm-ascend#144 and its installation guide; the CANN images source it before
    NNAL), and NNAL's own set_env.sh last."""
    pk = {
        "torch": [rec("torch", "2.7.1")],
        "torch-npu": [rec("torch_npu", "2.7.1")],
        "triton-ascend": [rec("triton_ascend", "3.2.0")],
    }
    f = codes(snap(toolkits=[dict(TK, version="8.3.RC2")], packages=pk, chips=["910B3"]))["CANN012"]
    assert f.fix[:5] == [
        "chmod +x Ascend-cann-toolkit_8.5.0_linux-aarch64.run && ./Ascend-cann-toolkit_8.5.0_linux-aarch64.run --install",
        "source /usr/local/Ascend/cann/set_env.sh",
        "chmod +x Ascend-cann-910b-ops_8.5.0_linux-aarch64.run && ./Ascend-cann-910b-ops_8.5.0_linux-aarch64.run --install",
        "chmod +x Ascend-cann-nnal_8.5.0_linux-aarch64.run && ./Ascend-cann-nnal_8.5.0_linux-aarch64.run --install",
        "source /usr/local/Ascend/nnal/atb/set_env.sh  # CANN 8.5.0 for triton-ascend 3.2.0",
    ]


def test_a_source_installed_framework_for_a_newer_cann_names_the_branch_made_for_this_one():
    # MindSpeed-LLM's version table: 2.3.0 -> CANN 8.5.0, 2.2.0 -> CANN 8.3.RC1; it is installed
    # from a git checkout, so the alternative is a branch, never `pip install mindspeed-llm==…`
    pk = {
        "torch": [rec("torch", "2.7.1")],
        "torch-npu": [rec("torch_npu", "2.7.1")],
        "mindspeed-llm": [rec("mindspeed_llm", "2.3.0")],
    }
    f = codes(snap(toolkits=[dict(TK, version="8.3.RC1")], packages=pk))["CANN012"]
    assert f.title == "MindSpeed-LLM 2.3.0 needs CANN 8.5.0 or newer, but CANN 8.3.RC1 is in use"
    assert (
        "or keep CANN 8.3.RC1 and use MindSpeed-LLM 2.2.0 (made for it): check out that branch and reinstall it"
        in f.fix
    )
    assert not any("pip install" in line and "mindspeed" in line for line in f.fix)


def test_vllm_ascend_0_16_to_0_19_document_cann_8_5_1_and_8_5_0_under_them_is_a_warning():
    # vllm-ascend versioning policy (tags v0.17.0rc1 ... v0.19.1rc1, main): v0.14.0rc1/v0.15.0rc1
    # -> Stable CANN 8.5.0; v0.16.0rc1 ... v0.19.1rc1 -> 8.5.1 (their Dockerfiles: cann:8.5.1)
    pk = {
        "torch": [rec("torch", "2.9.0")],
        "torch-npu": [rec("torch_npu", "2.9.0")],
        "vllm-ascend": [rec("vllm_ascend", "0.17.0rc1")],
    }
    assert "CANN012" not in codes(snap(toolkits=[dict(TK, version="8.5.1")], packages=pk))
    f = codes(snap(toolkits=[dict(TK, version="8.5.0")], packages=pk))["CANN012"]
    assert f.title == (
        "vllm-ascend 0.17.0rc1 needs CANN 8.5.1 or newer, but CANN 8.5.0 is in use (same 8.5 release line)"
    )
    assert f.severity == "warning"
    assert any("Dockerfile at v0.16.0rc1" in line for line in f.evidence)
    # another release line stays an error
    assert codes(snap(toolkits=[dict(TK, version="8.3.RC2")], packages=pk))["CANN012"].severity == "error"
    # the releases before 0.16 document 8.5.0: quiet on it
    pk["vllm-ascend"] = [rec("vllm_ascend", "0.15.0rc1")]
    assert "CANN012" not in codes(snap(toolkits=[dict(TK, version="8.5.0")], packages=pk))


@pytest.mark.parametrize(
    "name, noun, where",
    [
        ("hccl-clean-two-nodes", "container", "docker container"),
        ("k16-container-no-devices", "container", "docker container"),
        ("case41-k8s-cpu-manager-static-device-cgroup", "pod's container", "containerd pod's container"),
        ("dev-npu-smi-not-found-host", None, None),
    ],
)
def test_no_cann_and_no_torch_npu_says_what_is_true_where_it_runs(name, noun, where, tmp_path):
    """Neither CANN nor torch_npu: "fine on a host that runs CANN in containers" is said on a
    host only; inside a container the note names the container and what a job there needs."""
    from scenario_runner import REPO, prepare, run_check

    run = run_check(prepare(REPO / "tests" / "scenarios" / name, tmp_path))
    (f,) = [f for f in run.doc["findings"] if f["code"] == "CANN001"]
    assert f["severity"] == "info"
    text = "\n".join([f["title"], *f["evidence"]])
    if noun is None:
        assert (
            f["title"] == "No CANN toolkit installed (no torch_npu either; fine on a host that runs CANN in containers)"
        )
        assert "container facts" not in text
    else:
        assert "on a host" not in text
        assert f["title"].startswith(f"No CANN toolkit in this {noun} (no torch_npu either): ")
        assert "needs CANN and torch_npu in the image" in f["title"]
        assert f"npudoctor runs in a {where} (container facts: " in text
