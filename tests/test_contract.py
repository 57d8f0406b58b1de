"""The JSON contract of `check --json` against docs/schema/check.schema.json, the exit-code
contract, `explain`, `collect` → `check --from` round trip, and the calm plain-machine report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import clirun
import jsonschema
import pytest

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "docs/schema/check.schema.json").read_text())


def npudoctor(*args, env=None, cwd=None, input=None):
    return clirun.npudoctor(*args, env=env, cwd=cwd, input=input)


def npudoctor_process(*args, env=None, cwd=None, input=None):
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        input=input,
        timeout=120,
    )


@pytest.fixture
def empty_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    return root


def plain_env(tmp_path):
    """An environment like a fresh shell on a machine without any NPU software."""
    bin_dir = tmp_path / "emptybin"
    bin_dir.mkdir(exist_ok=True)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "NPUDOCTOR_CONFIG": "/nonexistent"}


def test_check_json_matches_schema_on_empty_root(tmp_path, empty_root):
    proc = npudoctor("check", "--root", str(empty_root), "--json", env=plain_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["target"]["mode"] == "root"
    assert doc["summary"]["error"] == 0 and doc["exit_code"] == 0
    assert "host" in doc["facts"]
    for finding in doc["findings"]:
        assert finding["severity"] != "error", finding


def test_e2e_plain_machine_check_is_calm(tmp_path):
    """A real process on this machine (kept out of process on purpose: the live probe of
    the interpreter npudoctor runs in)."""
    proc = npudoctor_process("check", env=plain_env(tmp_path) | {"PATH": os.environ["PATH"]}, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "0 error(s)" in proc.stdout


def test_collect_then_check_from_round_trip(tmp_path, empty_root):
    out = tmp_path / "site.json"
    proc = npudoctor("collect", "--root", str(empty_root), "-o", str(out), env=plain_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(out.read_text())
    assert snap["schema_version"] == 1 and snap["redacted"] is True and "host" in snap["facts"]
    replay = npudoctor("check", "--from", str(out), "--json", env=plain_env(tmp_path))
    assert replay.returncode == 0, replay.stderr
    doc = json.loads(replay.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["target"]["mode"] == "from"
    assert doc["facts"]["host"] == snap["facts"]["host"]


# e2e: the exit status of a real process (the console entry's sys.exit), as a shell sees it
@pytest.mark.parametrize("run", [npudoctor, npudoctor_process], ids=["in-process", "e2e"])
def test_usage_errors_exit_2_without_traceback(tmp_path, empty_root, run):
    bad_from = tmp_path / "garbage.json"
    bad_from.write_bytes(b"\xff\xfe not json")
    cases = [
        ("check", "--root", str(tmp_path / "missing")),
        ("check", "--from", str(bad_from)),
        ("check", "--from", str(bad_from), "--root", str(empty_root)),
        ("check", "--no-such-option"),
        ("explain", "NOPE999"),
        ("check", "--matrix", str(bad_from)),
    ]
    for args in cases:
        proc = run(*args, env=plain_env(tmp_path))
        assert proc.returncode == 2, (args, proc.returncode, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, args


def test_explain_lists_every_registered_code_with_explanations(tmp_path):
    proc = npudoctor("explain", "--list", "--json", env=plain_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    codes = json.loads(proc.stdout)
    assert any(c["code"] == "HOST099" for c in codes)
    seen = set()
    for c in codes:
        assert c["code"] not in seen
        seen.add(c["code"])
        assert c["explain"].strip() and c["title"].strip(), c["code"]
    one = npudoctor("explain", "npudoctor-internal-error", env=plain_env(tmp_path))
    assert one.returncode == 0 and one.stdout.startswith("HOST099 npudoctor-internal-error")


def test_snapshot_redaction_masks_personal_data():
    from npudoctor.snapshot import Snapshot, redact

    snap = Snapshot(
        facts={
            "host": {"hostname": "gpu-node-17", "identity": {"name": "alice"}},
            "environment": {"vars": {"HF_TOKEN": "hf_abc", "HCCL_IF_IP": "10.1.2.3", "HOME": "/home/alice"}},
        },
        node="gpu-node-17",
    )
    safe = redact(snap)
    text = json.dumps(safe.to_dict())
    for secret in ("gpu-node-17", "alice", "hf_abc", "10.1.2"):
        assert secret not in text
    assert safe.node == redact(snap).node and safe.node.startswith("node-")
    # issue 20: an address becomes a stable pseudonymous address (was "x.x.x.3"), so the
    # HCCL address checks still compare: a valid IPv4 in 10/8 with the last octet kept
    ip = safe.facts["environment"]["vars"]["HCCL_IF_IP"]
    assert ip.startswith("10.") and ip.endswith(".3") and len(ip.split(".")) == 4 and ip != "10.1.2.3"
    assert ip == redact(snap).facts["environment"]["vars"]["HCCL_IF_IP"]


def test_env_file_parser_reads_docker_and_export_forms():
    from npudoctor.parsers.envfile import parse_env_file

    env, problems = parse_env_file(
        "# comment\nASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/latest\n"
        "export LD_LIBRARY_PATH='/a b:/c'\nEMPTY=\n\nnot a line\n1BAD=x\n"
    )
    assert env == {
        "ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/latest",
        "LD_LIBRARY_PATH": "/a b:/c",
        "EMPTY": "",
    }
    assert problems == ["line 6: not NAME=value: not a line", "line 7: not NAME=value: 1BAD=x"]


def test_env_file_option_replaces_the_diagnosed_environment(tmp_path, empty_root):
    env_file = tmp_path / "env"
    env_file.write_text("ASCEND_RT_VISIBLE_DEVICES=0,1\nHOME=/root\n")
    proc = npudoctor("check", "--root", str(empty_root), "--env-file", str(env_file), "--json", env=plain_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    visibility = json.loads(proc.stdout)["facts"]["devices"]["visibility"]
    assert visibility.get("ASCEND_RT_VISIBLE_DEVICES") == "0,1", visibility
    bad = tmp_path / "bad.env"
    bad.write_bytes(b"no equals sign here\n")
    proc = npudoctor("check", "--root", str(empty_root), "--env-file", str(bad), env=plain_env(tmp_path))
    assert proc.returncode == 2 and "line 1" in proc.stderr and "Traceback" not in proc.stderr


def test_malformed_snapshots_and_unknown_accounts_are_usage_errors(tmp_path, empty_root):
    empty = tmp_path / "empty.json"
    empty.write_text('{"schema_version": 1, "facts": {}}')
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"schema_version": 1, "npudoctor_version": "0.1.0", "facts": {"host": {}, "packages": "oops"}}')
    proc = npudoctor("check", "--from", str(empty), env=plain_env(tmp_path))
    assert proc.returncode == 2 and "empty snapshot" in proc.stderr, proc.stderr
    # A section that is not an object is a "could not read" fact (HOST005) and the rest is
    # judged (issue 20); it used to refuse the whole snapshot with exit 2.
    proc = npudoctor("check", "--from", str(wrong), "--json", env=plain_env(tmp_path))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr  # a warning
    host005 = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "HOST005"]
    assert host005 and host005[0]["data"]["sections"] == ["packages"], host005
    assert host005[0]["evidence"] == ["packages.<section>: expected object, got str"]
    text = npudoctor("check", "--from", str(wrong), env=plain_env(tmp_path)).stdout
    assert "– Python packages: not checked: could not read its facts: the section is a string, not an object" in text
    (empty_root / "etc").mkdir()
    (empty_root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\nalice:x:1001:1001::/home/alice:/bin/sh\n")
    for user, code in (("nosuchuser", 2), ("-5", 2), ("alice", 0), ("4242", 0)):
        proc = npudoctor("check", "--root", str(empty_root), "--user", user, "--json", env=plain_env(tmp_path))
        assert proc.returncode == code, (user, proc.stderr)
        if code == 2:
            assert f"--user {user}: no such account" in proc.stderr


def test_findings_never_carry_terminal_control_characters():
    from npudoctor.rules import INTERNAL

    f = INTERNAL.finding(
        title="npu-smi said \x1b]0;PWNED\x07\x1b[2J\x00 ok", evidence=["line1\nline2\x1b[31m"], fix=["a\tb"]
    )
    assert f.title == "npu-smi said ?]0;PWNED??[2J? ok"
    assert f.evidence == ["line1\nline2?[31m"] and f.fix == ["a\tb"]


def test_markdown_report_masks_the_judged_account_and_host_name():
    from npudoctor.remedies import Command
    from npudoctor.report.markdown import render
    from npudoctor.rules import INTERNAL
    from npudoctor.snapshot import Snapshot

    snap = Snapshot(
        facts={"host": {"hostname": "gpu-node-17", "identity": {"name": "alice", "uid": 1001}}},
        node="gpu-node-17",
    )
    finding = INTERNAL.finding(
        title="alice cannot open /dev/davinci0 on gpu-node-17",
        evidence=["judged account: alice (uid 1001)", "HCCL_IF_IP=10.0.0.7"],
        fix=[Command(("usermod", "-aG", "HwHiAiUser", "alice"))],
    )
    text = render(snap, [finding])
    assert "alice" not in text and "gpu-node-17" not in text and "10.0.0" not in text
    assert "<user> cannot open /dev/davinci0 on <host>" in text
    assert "```sh\nusermod -aG HwHiAiUser <user>\n```" in text


def test_hostile_snapshots_never_crash_npudoctor(tmp_path, empty_root):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000)
    collected = tmp_path / "site.json"
    assert (
        npudoctor("collect", "--root", str(empty_root), "-o", str(collected), env=plain_env(tmp_path)).returncode == 0
    )
    odd = []
    for i, arch in enumerate(({"a": 1}, -1, ["x"], None)):
        snap = json.loads(collected.read_text())
        snap["facts"]["host"]["arch"] = arch
        path = tmp_path / f"odd{i}.json"
        path.write_text(json.dumps(snap))
        odd.append(path)
    for args in (
        ("check", "--from", str(deep)),
        ("compare", str(deep), str(collected)),
        ("plan", "--for", str(deep)),
        *(("check", "--from", str(p)) for p in odd),
        *(("check", "--markdown", "--from", str(p)) for p in odd),
        *(("compare", str(p), str(collected)) for p in odd),
    ):
        proc = npudoctor(*args, env=plain_env(tmp_path))
        assert proc.returncode in (0, 1, 2), (args, proc.returncode, proc.stderr[-800:])
        assert "Traceback" not in proc.stderr and "This is a bug" not in proc.stderr, args
