"""Commands, not prose (issue 31): every command a user should run is a ``$`` line that
runs as printed, and no fix adds an account to a privileged group."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest
from clirun import npudoctor
from scenario_runner import environment, prepare, tomllib

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "tests" / "scenarios"


def _finding(doc: Dict[str, Any], code: str) -> Dict[str, Any]:
    found = [f for f in doc["findings"] if f["code"] == code]
    assert len(found) == 1, [f["code"] for f in doc["findings"]]
    return found[0]


def _run(scenario: Path, *args: str) -> Any:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    extra = [str(a) for a in spec.get("setup", {}).get("args", [])]
    return npudoctor(
        "check", "--root", str(scenario / "root"), *extra, *args, env=environment(scenario, spec), width=200
    )


def _dollar_lines(text: str) -> List[str]:
    return [line.strip()[2:] for line in text.splitlines() if line.strip().startswith("$ ")]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown of the device nodes needs root")
def test_joining_the_device_group_is_a_command(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / "k17-user-not-in-device-group", tmp_path)
    text = _run(s).stdout
    assert "usermod -aG HwHiAiUser alice  # then log in again" in _dollar_lines(text)
    fix = _finding(json.loads(_run(s, "--json").stdout), "DEV021")["remedies"]
    assert [r["command"] for r in fix] == ["usermod -aG HwHiAiUser alice"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown of the device nodes needs root")
def test_nodes_owned_by_root_are_given_back_never_root_joined(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / "k17-user-not-in-device-group", tmp_path)
    dev = s / "root" / "dev"
    nodes = sorted(p.name for p in dev.iterdir() if p.name.startswith(("davinci", "devmm", "hisi")))
    for name in nodes:
        os.chown(dev / name, 0, 0)
        os.chmod(dev / name, 0o660)
    text = _run(s).stdout
    assert not any("usermod" in line and " root " in line for line in text.splitlines()), text
    commands = [r["command"] for r in _finding(json.loads(_run(s, "--json").stdout), "DEV021")["remedies"]]
    paths = " ".join(f"/dev/{n}" for n in nodes)
    assert commands == [
        f"chown HwHiAiUser:HwHiAiUser {paths}",
        f"chmod 0660 {paths}",
        "usermod -aG HwHiAiUser alice",
    ]
    assert f"chown HwHiAiUser:HwHiAiUser {paths}" in _dollar_lines(text)


K22 = SCENARIOS / "k22-cache-dir-not-writable-for-user"


def _host003(s: Path) -> List[Dict[str, Any]]:
    doc = json.loads(_run(s, "--json").stdout)
    return [f for f in doc["findings"] if f["code"] == "HOST003"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown of the home directory needs root")
def test_an_unwritable_log_or_temp_dir_is_moved_by_its_own_variable(tmp_path: Path) -> None:
    """~/ascend (logs) moves with ASCEND_PROCESS_LOG_PATH, /tmp with TMPDIR, a directory
    named by a variable with that variable -- each to a directory the facts show writable,
    each fix its own (no one identical fix for every finding)."""
    s = prepare(K22, tmp_path / "home")
    os.chown(s / "root/home/worker", 0, 0)  # the home is not the worker's: ~/ascend cannot be made
    os.chmod(s / "root/home/worker", 0o755)
    found = {f["subject"]: [r["command"] for r in f["remedies"]] for f in _host003(s)}
    assert found == {
        "/home/worker/ascend": ["mkdir -p /tmp/ascend-log", "export ASCEND_PROCESS_LOG_PATH=/tmp/ascend-log"],
        "/data/shared/ascend-cache": ["mkdir -p /tmp/ascend-cache", "export ASCEND_CACHE_PATH=/tmp/ascend-cache"],
    }
    s = prepare(K22, tmp_path / "tmp")
    os.chmod(s / "root/tmp", 0o755)
    shutil.rmtree(s / "root/data/shared")  # only /tmp is left unwritable
    (s / "root/data/shared/ascend-cache").mkdir(parents=True)
    os.chown(s / "root/data/shared/ascend-cache", 1000, 1000)
    found = {f["subject"]: [r["command"] for r in f["remedies"]] for f in _host003(s)}
    assert found == {"/tmp": ["mkdir -p /home/worker/tmp", "export TMPDIR=/home/worker/tmp"]}
    assert "$ export TMPDIR=/home/worker/tmp" in _run(s).stdout


def test_a_fix_already_applied_is_not_offered_again() -> None:
    """After ``eval "$(npudoctor env --root root)"`` the re-check's fixes do not source the
    set_env.sh just applied (the kernels are still missing: that fix stays)."""
    import shlex

    s = SCENARIOS / "k10-set-env-not-sourced"
    spec = tomllib.loads((s / "scenario.toml").read_text(encoding="utf-8"))
    env = environment(s, spec)
    before = json.loads(_run(s, "--json").stdout)
    assert "ENV001" in [f["code"] for f in before["findings"]]
    # ENV001 sources set_env.sh; the kernels step refers to it instead of sourcing it again
    assert [r["kind"] for r in _finding(before, "CANN004")["remedies"]] == ["prose", "install-package"]
    assert _finding(before, "ENV001")["remedies"][0]["kind"] == "source"
    printed = npudoctor("env", "--root", str(s / "root"), env=env)
    assert printed.returncode == 0, printed.stderr
    for line in printed.stdout.splitlines():
        if line.startswith("export "):
            name, _, value = shlex.split(line[len("export ") :])[0].partition("=")
            env[name] = value
    after = json.loads(npudoctor("check", "--root", str(s / "root"), "--json", env=env).stdout)
    assert "ENV001" not in [f["code"] for f in after["findings"]]
    kinds = [r["kind"] for r in _finding(after, "CANN004")["remedies"]]
    assert kinds == ["install-package"]


def test_markdown_puts_commands_in_sh_blocks_and_prose_outside() -> None:
    s = SCENARIOS / "k07-numpy-2-with-cann-8.2.RC1"
    md = npudoctor("check", "--root", str(s / "root"), "--markdown", env={"PATH": "/usr/bin:/bin"}).stdout
    doc = json.loads(npudoctor("check", "--root", str(s / "root"), "--json", env={"PATH": "/usr/bin:/bin"}).stdout)
    blocks, prose, inside, kind = [], [], False, ""
    for line in md.splitlines():
        if line.startswith("```"):
            inside, kind = not inside, line[3:]
            continue
        (blocks if inside and kind == "sh" else prose).append(line)
    assert "```text" not in md
    env001 = _finding(doc, "ENV001")
    commands = [r["command"] for r in env001["remedies"] if r["command"]]
    assert commands and all(any(b.startswith(c) for b in blocks) for c in commands)
    assert 'eval "$(npudoctor env)"  # the same variables, computed by npudoctor from the toolkit' in blocks
    assert "or:" in prose
    said = [r["text"] for r in env001["remedies"] if r["kind"] == "prose"]
    assert said and all(t in prose and t not in blocks for t in said)
    assert not any(line.startswith(("install the", "For a systemd")) for line in blocks)


def test_an_installer_for_an_unknown_chip_is_a_command_for_one_named_chip() -> None:
    """The chip is unknown: the prose says so once, then the installer of one chip type runs
    as printed (``chmod +x`` and ``./``), its chip said in the comment."""
    s = SCENARIOS / "k01-control-matched-aarch64"
    text = npudoctor("check", "--root", str(s / "root"), env={"PATH": "/usr/bin:/bin"}, width=250).stdout
    run = "Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run"
    assert f"chmod +x {run} && ./{run} --install  # for 910b" in _dollar_lines(text)
    assert "one of 910b, 910, 310p or A3):" in text
    md = npudoctor("check", "--root", str(s / "root"), "--markdown", env={"PATH": "/usr/bin:/bin"}).stdout
    assert f"```sh\nchmod +x {run} && ./{run} --install  # for 910b\n" in md


def test_the_toolchain_ppa_for_an_old_libstdcxx_is_one_command_in_every_form() -> None:
    """lib-glibcxx-too-old (Ubuntu): the PPA install is a ``$`` line printed whole, an ``sh``
    block in Markdown and a ``command`` remedy in JSON; the other ways stay prose."""
    s = SCENARIOS / "lib-glibcxx-too-old"
    want = (
        "apt-get update && apt-get install -y software-properties-common && "
        "add-apt-repository -y ppa:ubuntu-toolchain-r/test && apt-get update && apt-get install -y libstdc++6"
    )
    doc = json.loads(_run(s, "--json").stdout)
    remedies = _finding(doc, "LIB002")["remedies"]
    assert [(r["kind"], r["command"]) for r in remedies][0] == ("command", want)
    assert [r["kind"] for r in remedies[1:]] == ["prose", "prose"]
    assert any(line.startswith(want + "  # ") for line in _dollar_lines(_run(s).stdout))
    md = _run(s, "--markdown").stdout
    assert f"```sh\n{want}  # the toolchain PPA's libstdc++6 comes from a newer GCC\n```" in md


def test_npu_smi_missing_folds_under_the_missing_driver() -> None:
    """npu-smi ships with the driver: with no driver, DEV003 is its symptom (one root cause,
    one finding); with a driver, DEV003 stands alone (see the devices tests)."""
    s = SCENARIOS / "k01-control-matched-aarch64"
    doc = json.loads(npudoctor("check", "--root", str(s / "root"), "--json", env={"PATH": "/usr/bin:/bin"}).stdout)
    assert _finding(doc, "DEV003")["data"]["because"] == "DRV001"
    text = npudoctor("check", "--root", str(s / "root"), env={"PATH": "/usr/bin:/bin"}, width=200).stdout
    assert "because of this (DRV001), also:\n        ! DEV003" in text


def test_an_unknown_chip_is_said_once_per_fix() -> None:
    s = SCENARIOS / "k07-numpy-2-with-cann-8.2.RC1"
    doc = json.loads(npudoctor("check", "--root", str(s / "root"), "--json", env={"PATH": "/usr/bin:/bin"}).stdout)
    fix = _finding(doc, "DRV001")["fix"]
    assert sum("unknown here: no NPU chip of a known type was seen" in line for line in fix) == 1
    assert any(line.startswith("install the NPU firmware") and "for the same NPU chip type" in line for line in fix)
    assert [r["shell"] for r in _finding(doc, "DRV001")["remedies"]] == fix


def test_the_numpy_range_names_the_matrix_row_it_comes_from() -> None:
    """numpy 2 with CANN 8.2.RC1: the evidence cites the CANN row whose range applies and its
    source (8.2.RC1 has none of its own: the nearest older documented release's, said so),
    not a document the user does not have."""
    s = SCENARIOS / "k07-numpy-2-with-cann-8.2.RC1"
    doc = json.loads(npudoctor("check", "--root", str(s / "root"), "--json", env={"PATH": "/usr/bin:/bin"}).stdout)
    from npudoctor.knowledge.matrix import load_matrix

    row = load_matrix().cann_row("8.0.0")
    assert row is not None and row["source"] and not load_matrix().cann_row("8.2.RC1").get("numpy")
    evidence = _finding(doc, "PKG007")["evidence"]
    assert (
        "not documented either way (CANN 8.2.RC1 has no numpy statement of its own; the nearest older documented "
        f"CANN needs numpy>=1.19.2,<2 (CANN 8.0.0: {row['source']}))"
    ) in evidence
    assert not any("REPORT" in line for line in evidence)
    # the title says whose range it is too: this CANN's is unknown, an older one's is borrowed
    assert _finding(doc, "PKG007")["title"].startswith(
        "numpy 2.0.2 is installed; CANN 8.2.RC1 documents no numpy bound, and the nearest older CANN "
        "that does needs numpy<2,>=1.19.2 on Python 3.10"
    )
