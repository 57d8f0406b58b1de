"""Fixes that depend on each other come out as one ordered list (driver → CANN →
kernels/NNAL → set_env.sh → packages → libraries)."""

from __future__ import annotations

import re

import pytest
from clirun import npudoctor
from scenario_runner import REPO, environment, prepare, run_check


def test_fix_order_on_a_stack_broken_in_several_layers(tmp_path):
    scenario = prepare(REPO / "tests/scenarios/k05-torch-npu-2.10-on-cann-8.0.0", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    assert {"DRV001", "CANN003", "PKG006"} <= set(by_code), sorted(by_code)
    assert by_code["DRV001"]["after"] == []
    assert by_code["CANN003"]["after"] == ["DRV001"]
    assert by_code["PKG006"]["after"][:2] == ["DRV001", "CANN003"]
    assert all(f["after"] == [] for f in run.doc["findings"] if f["code"].startswith(("DEV", "CTR", "HOST")))

    proc = npudoctor("check", "--root", str(scenario / "root"), env=environment(scenario, run.spec))
    tail = proc.stdout[proc.stdout.index("Fix in this order") :]
    steps = [line.split()[1] for line in tail.splitlines()[1:] if re.match(r"^\s+\d+\. ", line)]
    assert steps[:2] == ["DRV001", "CANN003"] and steps[-1] == "PKG006", tail
    assert "DEV003" not in steps


def test_independent_findings_get_no_order():
    from npudoctor.rules.order import layer_of

    codes = ("DEV040", "DRV002", "CANN003", "CANN004", "ENV001", "PKG007", "LIB001", "DEEP002")
    assert [layer_of(c) for c in codes] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert layer_of("DEV002") == -1 and layer_of("DEV041") == -1 and layer_of("HCCL007") == -1


def test_a_new_cann_release_covers_the_kernels_and_nnal_of_the_old_one(tmp_path):
    scenario = prepare(REPO / "tests/scenarios/case13-vllm-ascend-0.7.3-on-cann-8.0.0", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    assert "CANN012" in by_code and "CANN007" in by_code
    assert by_code["CANN007"]["data"]["superseded_by"] == "CANN012"
    from npudoctor.findings import Finding
    from npudoctor.report.build import fix_list

    listed = [f.code for f in fix_list([Finding.from_dict(f) for f in run.doc["findings"]])]
    assert "CANN012" in listed and "CANN007" not in listed
    # NNAL 8.0.0 is still the fix with CANN012's other option (keep CANN 8.0.0): kept, and
    # its last line says the new release's install makes it unneeded
    assert by_code["CANN007"]["fix"][0].startswith("chmod +x Ascend-cann-nnal_8.0.0_linux-aarch64.run")
    assert by_code["CANN007"]["fix"][-1] == (
        "not needed if you install the whole CANN release that the fix of CANN012 names "
        "(its kernels/ops and NNAL come with it)"
    )
    assert by_code["CANN007"]["remedies"][-1]["kind"] == "prose"


def test_framework_without_torch_npu_and_cann_is_an_error_not_fine(tmp_path):
    scenario = prepare(REPO / "tests/scenarios/k13-310p-duo-vllm-ascend", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    assert by_code["PKG004"]["title"] == "vllm-ascend 0.9.1 needs torch_npu 2.5.1.post1, but torch_npu is not installed"
    assert by_code["CANN001"]["severity"] == "error" and "fine" not in by_code["CANN001"]["title"]
    assert by_code["CANN007"]["data"]["superseded_by"] == "CANN001"
    assert run.returncode == 1


def test_the_chip_support_decision_comes_first(tmp_path):
    # case 31: vllm-ascend 0.9.1 on an Atlas 300I Duo (310P3), nothing else installed.  DEV040
    # replaces the framework release; the CANN and torch_npu the later steps install depend
    # on that release, so its fix is step 1, not an independent fix after them.
    scenario = prepare(REPO / "tests/scenarios/k13-310p-duo-vllm-ascend", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    from npudoctor.findings import Finding
    from npudoctor.report.build import fix_list

    listed = [f.code for f in fix_list([Finding.from_dict(f) for f in run.doc["findings"]])]
    assert listed == ["DEV040", "CANN001", "PKG004"]
    assert by_code["DEV040"]["after"] == []
    assert by_code["CANN001"]["after"] == ["DEV040"]
    assert by_code["PKG004"]["after"][0] == "DEV040"
    assert by_code["DEV041"]["after"] == []  # no bf16: independent of any release

    proc = npudoctor("check", "--root", str(scenario / "root"), env=environment(scenario, run.spec))
    tail = proc.stdout[proc.stdout.index("\nFix in this order\n") + 1 :].splitlines()
    assert tail[1] == "(chip support → CANN → packages)", tail
    assert [line.split()[1] for line in tail[2:] if re.match(r"^\s+\d+\. ", line)] == listed


def test_the_fixes_after_the_chip_support_decision_are_for_the_release_it_names(tmp_path):
    # case 31 again: the sources state vllm-ascend 0.9.1 does not run on 310P and that 0.14.0rc1
    # is the first release that does (framework_support.toml).  The CANN and torch_npu steps
    # after DEV040 are computed for 0.14.0rc1 -- torch_npu 2.9.0 (its versioning policy),
    # paired with CANN 8.5.0 (matrix) -- not for the 0.9.1 it replaces (torch_npu 2.5.1.post1).
    scenario = prepare(REPO / "tests/scenarios/k13-310p-duo-vllm-ascend", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    assert by_code["DEV040"]["data"] == {"framework": "vllm-ascend", "installed": "0.9.1", "move_to": "0.14.0rc1"}
    assert by_code["DEV040"]["fix"][1] == "vllm-ascend 0.14.0rc1 needs torch_npu 2.9.0 and CANN 8.5.0 or newer"
    pkg = by_code["PKG004"]
    assert pkg["title"] == "vllm-ascend 0.9.1 needs torch_npu 2.5.1.post1, but torch_npu is not installed"
    assert pkg["fix"] == [
        "for vllm-ascend 0.14.0rc1, the release that runs on 310P3: "
        "/usr/local/bin/python3.10 -m pip install torch==2.9.0 torch-npu==2.9.0"
    ]
    assert pkg["remedies"][0]["kind"] == "pip-install"
    assert pkg["data"] == {"for_release": "vllm-ascend 0.14.0rc1"}
    cann = by_code["CANN001"]
    assert cann["fix"][0] == (
        "for vllm-ascend 0.14.0rc1, the release that runs on 310P3 (its torch_npu 2.9.0 is paired with CANN 8.5.0):"
    )
    assert cann["remedies"][0]["kind"] == "prose"
    assert cann["fix"][2] == (
        "chmod +x Ascend-cann-toolkit_8.5.0_linux-$(uname -m).run && ./Ascend-cann-toolkit_8.5.0_linux-$(uname -m).run --install"
    )
    assert any(line.startswith("chmod +x Ascend-cann-310p-ops_8.5.0_") for line in cann["fix"])
    assert cann["data"] == {"torch_npu": "2.9.0", "cann": "8.5.0", "for_release": "vllm-ascend 0.14.0rc1"}
    # no fix line is still for the release DEV040 replaces
    assert not [line for f in run.doc["findings"] for line in f["fix"] if "2.5.1" in line]


@pytest.mark.parametrize(
    "name, header, steps",
    [
        # LIB001 folds under ENV003 (the loader path left out the driver's directories)
        ("lib-driver-not-on-loader-path", "(set_env.sh → packages)", ["ENV003", "PKG006"]),
        ("lib-glibcxx-too-old", "(packages → shared libraries)", ["PKG006", "LIB002"]),
        ("k03-extension-other-torch-npu", "(packages → shared libraries)", ["PKG006", "LIB005"]),
        # LIB003 folds under PKG001 (the missing symbols prove the same torch mismatch)
        ("lib-k01-torch-symbols", "(packages)", ["PKG001", "PKG006"]),
        ("k05-torch-npu-2.10-on-cann-8.0.0", "(driver → CANN → packages)", ["DRV001", "CANN003", "PKG006"]),
        # the torch_npu release that knows the chip (and its CANN) first: the CANN deps follow it
        ("case33-310b4-board-torch-npu-2.1.0rc1", "(chip support → packages)", ["DEV040", "PKG006"]),
    ],
)
def test_the_header_of_the_fix_list_says_the_order_of_its_steps(name, header, steps, tmp_path):
    """The header names the layers of the listed fixes in the list's own order (a library
    fix after the packages): it never claims an order the steps do not follow."""
    scenario = prepare(REPO / "tests/scenarios" / name, tmp_path)
    env = environment(scenario, run_check(scenario).spec)
    text = npudoctor("check", "--root", str(scenario / "root"), env=env, width=200).stdout
    tail = text[text.index("\nFix in this order\n") + 1 :].splitlines()
    assert tail[1] == header, tail
    assert [line.split()[1] for line in tail[2:] if re.match(r"^\s+\d+\. ", line)] == steps
    md = npudoctor("check", "--root", str(scenario / "root"), "--markdown", env=env).stdout
    assert f"Fix in this order {header}:" in md


def test_a_fix_in_no_layer_is_named_as_such_in_the_header():
    from npudoctor.findings import Finding
    from npudoctor.report.build import order_header

    def f(code):
        return Finding(code=code, name="x", severity="error", area="x", title="t")

    assert order_header([f("DRV001"), f("HOST002")]) == "driver → other fixes"
    assert order_header([f("ENV001"), f("ENV003"), f("PKG001"), f("LIB001"), f("DEEP001")]) == (
        "set_env.sh → packages → shared libraries → import check"
    )


def test_kernels_install_after_set_env_sh_sources_it_once(tmp_path):
    # case 23: set_env.sh never sourced, kernels missing. The kernels installer needs the
    # toolkit's environment (Ascend/docs pull request 69): ENV001's `source` comes first
    # and the kernels step does not print it again.
    scenario = prepare(REPO / "tests/scenarios/case23-toolkit-sourced-never-kernels-missing", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    source = "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert by_code["ENV001"]["fix"][0] == source
    assert by_code["ENV001"]["after"] == []
    kernels = by_code["CANN004"]
    assert kernels["severity"] == "error" and kernels["after"] == ["ENV001"]
    assert source not in kernels["fix"]
    assert kernels["fix"][0] == "in the shell where the toolkit's environment is applied (ENV001's fix):"
    assert kernels["remedies"][0]["kind"] == "prose" and kernels["remedies"][1]["kind"] == "install-package"

    proc = npudoctor("check", "--root", str(scenario / "root"), env=environment(scenario, run.spec))
    tail = proc.stdout[proc.stdout.index("Fix in this order") :]
    steps = [line.split()[1] for line in tail.splitlines()[1:] if re.match(r"^\s+\d+\. ", line)]
    assert steps[:2] == ["ENV001", "CANN004"], tail
    assert tail.count("$ " + source) == 1, tail


def test_nnal_install_leaves_sourcing_its_set_env_sh_to_env005(tmp_path):
    # NNAL of another release (CANN008) and its set_env.sh not sourced (ENV005): the
    # reinstall is followed by ENV005's `source`, printed once, not in both fixes.
    scenario = prepare(REPO / "tests/scenarios/k04-nnal-8.2.RC1-on-toolkit-8.0.0", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    source = "source /usr/local/Ascend/nnal/atb/set_env.sh"
    assert by_code["ENV005"]["remedies"][0]["command"] == source
    assert "CANN008" in by_code["ENV005"]["after"] and "ENV005" not in by_code["CANN008"]["after"]
    nnal = by_code["CANN008"]
    assert [r.get("command") for r in nnal["remedies"]].count(source) == 0
    assert nnal["fix"][-1] == "then apply NNAL's environment (ENV005's fix)"
    assert nnal["remedies"][0]["kind"] == "install-package"


def test_a_fix_that_is_only_another_findings_environment_has_no_dangling_then(tmp_path):
    """k11: ATB_HOME_PATH names a directory that does not exist (CANN009), whose whole fix is
    sourcing NNAL's set_env.sh -- ENV005's command, printed there once.  The pointer is
    the only line of CANN009's fix: "apply …", not "then apply …" after nothing."""
    scenario = prepare(REPO / "tests/scenarios/k11-atb-home-abi-dir-missing", tmp_path)
    by_code = {f["code"]: f for f in run_check(scenario).doc["findings"]}
    assert by_code["CANN009"]["fix"] == ["apply NNAL's environment (ENV005's fix)"]
    assert by_code["ENV005"]["fix"][0].startswith("source /usr/local/Ascend/nnal/atb/set_env.sh")
