"""`npudoctor triage`: golden tests over the captured error outputs (tests/fixtures/error_*),
each with the facts of its case given as a --from snapshot (or a --root tree), plus the
streaming scanner's limits (huge lines, stdin, directories, exit codes)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import Result, npudoctor

from npudoctor.triage import CHUNK, MAX_LINE, MAX_UNKNOWN, Scanner, load_kb, rank

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"
CANN_DEPS = [
    "decorator",
    "attrs",
    "psutil",
    "absl-py",
    "cloudpickle",
    "ml-dtypes",
    "scipy",
    "tornado",
    "sympy",
    "cffi",
    "protobuf",
    "pyyaml",
    "requests",  # PKG006 (rules/packages.py) counts it among CANN's Python dependencies
]


SITE = "/opt/py/lib/python3.10/site-packages"
#: the python section as the probe writes it (the rules read the version for the matrix queries)
PYTHON = {"executable": "/opt/py/bin/python", "version": "3.10.12", "version_info": [3, 10, 12]}


def _pkgs(**versions):
    """The packages section as the probe writes it (``scanned``: the site dirs read)."""
    installed = {name.replace("_", "-"): [{"name": name, "version": v}] for name, v in versions.items()}
    return {"scanned": [SITE], "installed": installed}


def _not_sourced_env(version="8.0.0"):
    """The environment section the probe writes for a toolkit whose set_env.sh is not sourced."""
    return {
        "toolkit": {"path": TOOLKIT, "version": version, "set_env": "/usr/local/Ascend/ascend-toolkit/set_env.sh"},
        "current": {"PATH": "/usr/bin"},
        "sourced": False,
        "set_env_script": "/usr/local/Ascend/ascend-toolkit/set_env.sh",
        "missing_vars": ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"],
        "missing_paths": {"LD_LIBRARY_PATH": [f"{TOOLKIT}/lib64"]},
    }


def _toolkit(version="8.0.0"):
    rec = {
        "path": TOOLKIT,
        "version": version,
        "arch": "aarch64",
        "set_env": "/usr/local/Ascend/ascend-toolkit/set_env.sh",
    }
    return {"toolkits": [rec], "selected": rec}


def _snapshot(tmp_path: Path, facts: dict) -> str:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"schema_version": 1, "facts": facts}), encoding="utf-8")
    return str(path)


def triage(*args: str, stdin: bytes = b"", env=None) -> Result:
    return npudoctor("triage", *args, input=stdin, env=env, text=False)


def triage_json(*args: str, **kw):
    proc = triage(*args, "--json", **kw)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def _group(doc, entry_id):
    return next(g for g in doc["known"] if g["id"] == entry_id)


# sample, facts of its case, the entry that must be found, the kind its case names, verdict regex
GOLDEN = [
    (
        "error_import-torch_npu_libhccl-not-found_PTA-ERR00008.txt",
        {
            "cann": {"toolkits": [], "selected": None, "searched": [TOOLKIT]},
            "packages": _pkgs(torch="2.1.0", torch_npu="2.1.0.post3"),
        },
        "cann-library-not-found",
        None,  # nothing installed is no kind of kinds.md (K10 is "installed, not sourced")
        r"no CANN toolkit is installed",
    ),
    (
        "error_import-torch_npu_libhccl-not-found_traceback_container.txt",
        {"cann": _toolkit(), "environment": _not_sourced_env(), "container": {"in_container": True}},
        "cann-library-not-found",
        "K10",
        r"set_env\.sh was not sourced: source set_env\.sh",
    ),
    (
        "error_npu-smi_command-not-found_gha-runner-container.txt",
        {
            "driver": {"driver": {"path": "/usr/local/Ascend/driver", "exists": False}},
            "container": {"in_container": True},
            "packages": _pkgs(torch="2.1.0", torch_npu="2.1.0.post3"),
        },
        "npu-smi-not-found",
        "K16",
        r"npu-smi is not on PATH here",
    ),
    (
        "error_npu-smi_dcmi-8005_in-container_g_conLogLevel.txt",
        {
            "devices": {
                "npu_smi": {
                    "available": False,
                    "cause": "busy",
                    "code": -8005,
                    "message": "dcmi module initialize failed. ret is -8005",
                }
            }
        },
        "dcmi-8005-init-failed",
        "K15",
        r"busy or not accessible",
    ),
    (
        "error_npu-smi_dcmi-8020_device-used_in-container.txt",
        {"devices": {"npu_smi": {"available": False, "cause": "busy", "code": -8020, "message": "ret is -8020"}}},
        "dcmi-8020-device-used",
        "K15",
        r"held by another container",
    ),
    (
        "error_torch_npu_207004_ASCEND_RT_VISIBLE_DEVICES-out-of-range.txt",
        {
            "devices": {
                "visibility": {"ASCEND_RT_VISIBLE_DEVICES": "4"},
                "visible_count": 2,
                "npu_smi": {"available": True},
            }
        },
        "visible-devices-out-of-range",
        "K18",
        r"ASCEND_RT_VISIBLE_DEVICES='?4'? .*2 (visible )?device",  # DEV030 quotes the value
    ),
    (
        "error_torch_npu_507033_E30006_OPP-verify-failed_unescaped.txt",
        {
            "cann": _toolkit("8.3.RC1"),
            "driver": {"driver": {"path": "/usr/local/Ascend/driver", "exists": True, "version": "23.0.3"}},
        },
        "e30006-opp-verify",
        "K14",
        r"driver and CANN are not paired",
    ),
    (
        "error_torch_npu_EH9999_init-env-failed_missing-python-deps.txt",
        {"cann": _toolkit("7.0.RC1"), "packages": _pkgs(torch="2.1.0", numpy="1.24.4"), "python": PYTHON},
        "init-env-failed-eh9999",
        "K06",
        r"Python dependencies are missing here: .*missing: decorator",  # PKG006's title
    ),
    (
        "error_torch_npu_107002_context-empty_507008-init-soc-version.txt",
        {
            "driver": {"driver": {"path": "/usr/local/Ascend/driver", "exists": False}},
            "container": {"in_container": True},
            "packages": _pkgs(torch="2.1.0", torch_npu="2.1.0.post3"),
        },
        "acl-507008-soc-version",
        "K16",
        r"no Ascend driver is visible",
    ),
]


@pytest.mark.parametrize("sample,facts,entry_id,kind,verdict", GOLDEN, ids=[g[0][:60] for g in GOLDEN])
def test_golden_sample_names_the_cause_of_its_case(tmp_path, sample, facts, entry_id, kind, verdict):
    code, doc = triage_json(str(FIXTURES / sample), "--from", _snapshot(tmp_path, facts))
    assert code == 1
    assert doc["facts_from"] == "from"
    group = _group(doc, entry_id)
    top = group["causes"][0]
    assert top["status"] == "cause" and top["kind"] == kind, group["causes"]
    assert group["conclusion"] == top["here"]
    import re

    assert re.search(verdict, doc["verdict"] or ""), doc["verdict"]


def test_numpy2_is_named_for_500001(tmp_path):
    """Case 18: the opaque 500001 with numpy 2.1 installed -> numpy 2 is the cause here."""
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 08-05 starting\n"
        "RuntimeError: SetPrecisionMode:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:156 NPU function error: "
        "AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001\n"
        "[ERROR] 2025-08-05-10:00:00 (PID:1, Device:0, RankID:-1) ERR00100 PTA call acl api failed\n"
        "[Error]: The internal ACL of the system is incorrect.\n",
        encoding="utf-8",
    )
    deps = {d.replace("-", "_"): "1.0" for d in CANN_DEPS}
    facts = {
        "cann": _toolkit("8.2.RC1"),
        "packages": _pkgs(numpy="2.1.0", torch="2.7.1", **deps),
        "python": PYTHON,
    }
    code, doc = triage_json(str(log), "--from", _snapshot(tmp_path, facts))
    assert code == 1
    group = _group(doc, "acl-500001")
    assert group["count"] == 2 and group["first"]["line"] == 2 and group["last"]["line"] == 4
    assert group["causes"][0]["kind"] == "K07"
    assert "numpy 2 is the cause here" in doc["verdict"]
    assert "numpy 2.1.0" in doc["verdict"]
    # the fix is the rule's (PKG007: the matrix's numpy spec for CANN 8.2.RC1 on Python 3.10)
    assert group["fix"] == ["/opt/py/bin/python -m pip install 'numpy<2,>=1.19.2'"]
    assert group["causes"][0]["findings"] == ["PKG007"]
    # the other candidates were judged by their rules on the same facts: nothing found
    by_kind = {c["kind"]: c for c in group["causes"]}
    assert by_kind["K06"]["status"] == "no_sign"
    assert by_kind["K06"]["evidence"] == ["no PKG006 finding on these facts"]


def test_500001_without_numpy2_points_at_missing_deps(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("build op model failed, result = 500001\n", encoding="utf-8")
    facts = {"cann": _toolkit("8.0.0"), "packages": _pkgs(numpy="1.26.4", decorator="5.1"), "python": PYTHON}
    _, doc = triage_json(str(log), "--from", _snapshot(tmp_path, facts))
    causes = _group(doc, "acl-500001")["causes"]
    assert causes[0]["kind"] == "K06" and causes[0]["status"] == "cause"
    assert "attrs" in causes[0]["here"] and "decorator" not in causes[0]["here"]
    assert causes[0]["findings"] == ["PKG006"]
    # PKG007 judged numpy 1.26.4 and said nothing: no sign of numpy 2 (was "ruled out" by a
    # triage-only check; a cause is ruled out only by a finding that refutes it)
    assert {c["kind"]: c["status"] for c in causes}["K07"] == "no_sign"


def test_pip_lines_of_cann_dependencies_pin_the_protobuf_of_the_cann_in_use():
    """The signatures' generic pip lines carry the protobuf line the CANN in use needs (the
    matrix's 3.20.x for 8.0.0, quoted for the shell); with no CANN known, a plain name."""
    from npudoctor.triage import triage_text

    facts = {"cann": _toolkit("8.0.0"), "python": PYTHON}
    doc = triage_text("build op model failed, result = 500001\n", facts=facts)
    fix = _group(doc, "acl-500001")["fix"]
    assert fix[1] == (
        "/opt/py/bin/python -m pip install decorator attrs psutil absl-py cloudpickle ml-dtypes scipy tornado "
        "sympy cffi 'protobuf==3.20.*' pyyaml"
    )
    doc = triage_text("ModuleNotFoundError: No module named 'google.protobuf'\n")
    assert " cffi protobuf pyyaml" in doc["known"][0]["fix"][0]


def test_root_tree_with_toolkit_and_no_ld_library_path_says_source_set_env(tmp_path):
    """libhccl.so missing, a toolkit on disk, LD_LIBRARY_PATH unset -> source set_env.sh."""
    root = tmp_path / "root"
    info = root / "usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_bytes((FIXTURES / "ascend_toolkit_install_8.0.0_aarch64.info").read_bytes())
    (root / "usr/local/Ascend/ascend-toolkit/latest").symlink_to("8.0.0")
    # a set_env.sh of this install (ENV001 rebases one that sets up another install and
    # then writes the exports instead of `source`)
    (root / "usr/local/Ascend/ascend-toolkit/set_env.sh").write_text(
        "export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    code, doc = triage_json(
        str(FIXTURES / "error_import-torch_npu_libhccl-not-found_PTA-ERR00008.txt"), "--root", str(root), env=env
    )
    assert code == 1 and doc["facts_from"] == "root"
    top = _group(doc, "cann-library-not-found")["causes"][0]
    assert top["status"] == "cause", _group(doc, "cann-library-not-found")["causes"]
    assert "source set_env.sh" in top["here"]
    assert "ENV001" in top["findings"]
    # the evidence is ENV001's: what this set_env.sh sets is unset in the environment
    assert "unset: ASCEND_TOOLKIT_HOME" in top["evidence"], top["evidence"]
    assert top["fix"][0].startswith("source /usr/local/Ascend/ascend-toolkit/")


def test_noise_and_warnings_exit_zero():
    proc = triage(
        str(FIXTURES / "collect_env_stderr-noise_DrvMng_PROFILING_in-container_-8020.txt"), "--no-facts", "--json"
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert doc["summary"] == {"known_errors": 0, "known_warnings": 0, "noise": 6, "unknown": 0}
    prof = _group(doc, "profiling-callback-noise")
    assert (prof["count"], prof["first"]["line"], prof["last"]["line"]) == (5, 2, 6)
    proc = triage(str(FIXTURES / "torch_npu_import_warnings_owner_mismatch_8.0.T13_x86.txt"), "--no-facts", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["summary"]["known_warnings"] == 2


def test_unknown_lines_are_listed_not_guessed():
    proc = triage(
        str(FIXTURES / "error_torch_npu_507033_E30006_OPP-verify-failed_unescaped.txt"), "--no-facts", "--json"
    )
    doc = json.loads(proc.stdout)
    texts = [u["text"] for u in doc["unknown"]]
    assert any(t.startswith("Check param failed, dev can not be NULL!") for t in texts)
    assert doc["first_error"] == "acl-507033-set-device"
    assert doc["verdict"] is None  # no facts: nothing is concluded
    assert all(c["status"] == "unknown" for c in _group(doc, "e30006-opp-verify")["causes"])


def test_stdin_several_files_and_text_output(tmp_path):
    sample = (FIXTURES / "error_npu-smi_dcmi-8020_device-used_in-container.txt").read_bytes()
    proc = triage(
        "-", str(FIXTURES / "error_npu-smi_dcmi-8005_after-fw-upgrade-no-reboot.txt"), "--no-facts", stdin=sample
    )
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert "<stdin>:line 2" in out and "dcmi-8005-init-failed" in out
    assert "Exit codes" in triage("--help").stdout.decode()


def test_usage_errors_exit_2(tmp_path):
    assert triage(str(tmp_path / "missing.log")).returncode == 2
    assert triage().returncode == 2
    (tmp_path / "empty").mkdir()
    assert triage(str(tmp_path / "empty")).returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    assert (
        triage(str(FIXTURES / "error_npu-smi_dcmi-8005_after-fw-upgrade-no-reboot.txt"), "--from", str(bad)).returncode
        == 2
    )


def test_plog_directory_is_scanned(tmp_path):
    plog = tmp_path / "log" / "debug" / "plog"
    plog.mkdir(parents=True)
    (plog / "plog-1234_20250101.log").write_text(
        "[ERROR] HCCL(1234,python):2025-01-01-00:00:00.000.000 [transport.cc:1] Communication_Error_Get_Socket(EI0006)\n"
        * 3,
        encoding="utf-8",
    )
    (plog / "ignored.bin").write_bytes(b"\x00EI0006\n")
    _, doc = triage_json(str(tmp_path / "log"), "--no-facts")
    g = _group(doc, "ei0006-socket-timeout")
    assert g["count"] == 3 and g["first"]["source"].endswith("plog-1234_20250101.log")
    assert len(doc["sources"]) == 1


# ----------------------------------------------------------------- scanner unit tests


def _scan(data: bytes) -> Scanner:
    sc = Scanner(load_kb())
    sc.feed("t", io.BytesIO(data))
    return sc


def test_scanner_line_numbers_across_chunks_and_crlf():
    filler = b"x" * 100 + b"\n"
    data = filler * 20000 + b"dcmi module initialize failed. ret is -8005\r\n" + filler * 20000 + b"ret is -8005"
    sc = _scan(data)
    (group,) = sc.groups.values()
    assert (group.count, group.first.line, group.last.line) == (2, 20001, 40002)
    assert sc.sources[0].lines == 40002


def test_scanner_giant_line_without_newline_is_bounded():
    data = b"ImportError: libhccl.so: cannot open shared object file" + b"A" * (3 * CHUNK) + b"\nret is -8020\n"
    sc = _scan(data)
    ids = sorted(g.entry.id for g in sc.groups.values())
    assert ids == ["cann-library-not-found", "dcmi-8020-device-used"]
    assert sc.sources[0].long_lines == 1
    assert next(g for g in sc.groups.values() if g.entry.id == "dcmi-8020-device-used").first.line == 2
    assert all(len(g.sample) <= 600 for g in sc.groups.values())


def _progress_bar(steps: int) -> bytes:
    """A tqdm bar redrawn ``steps`` times on one line, as a log captures it (``\\r`` each time)."""
    return b"".join(
        b"\rLoading safetensors checkpoint shards: %3d%% Completed | %d/%d [00:%02d<00:00, 1.2it/s]"
        % (i * 100 // steps, i, steps, i % 60)
        for i in range(steps)
    )


def test_an_error_printed_over_a_long_progress_bar_is_found():
    """A 1.7 MB line of progress-bar redraws ending in an error (as a terminal shows it: the
    text after the last carriage return) is read there: the error is found on its line; the
    line counts as long, and what is kept of it stays within the line bound."""
    bar = _progress_bar(20000)
    assert len(bar) > 1_500_000
    atb = b"ImportError: libatb.so: cannot open shared object file: No such file or directory"
    for end in (b"\n", b"\r\n"):
        sc = _scan(b"step 1\n" + bar + b"\r" + atb + end + b"ret is -8020\n")
        found = sorted((g.entry.id, g.first.line, g.sample) for g in sc.groups.values())
        assert found == [
            ("atb-library-not-found", 2, atb.decode()),
            ("dcmi-8020-device-used", 3, "ret is -8020"),
        ]
        assert (sc.sources[0].lines, sc.sources[0].long_lines) == (3, 1)
    # after the last carriage return, more than the line bound: not kept, not read
    sc = _scan(bar + b"\r" + b"x" * (MAX_LINE + 1) + atb + b"\nret is -8020\n")
    assert [g.entry.id for g in sc.groups.values()] == ["dcmi-8020-device-used"]


def test_long_lines_read_in_part_are_said_in_the_text(tmp_path):
    """The text view says how many lines were read only in part (a line cut between two read
    steps, longer than the line bound), and the command that splits them."""
    log = tmp_path / "train.log"
    log.write_bytes(b"A" * (CHUNK + 10) + b"\nImportError: libatb.so: cannot open shared object file\n")
    out = npudoctor("triage", log.name, "--no-facts", cwd=tmp_path).stdout
    kib = MAX_LINE >> 10
    assert (
        f"  ! train.log: 1 line over {kib} KiB read in part (its first {kib} KiB and the text after its last carriage"
        " return); split long lines to read them whole:\n"
        "    $ cat train.log | tr '\\r' '\\n' | fold -w 60000 | npudoctor triage -\n"
    ) in out


def test_scanner_unknown_table_is_capped():
    data = b"".join(
        b"RuntimeError: thing %d went wrong in module_%s\n" % (i, chr(97 + i % 26).encode() * (i % 300 + 1))
        for i in range(3000)
    )
    sc = _scan(data)
    assert len(sc.unknown) == MAX_UNKNOWN
    assert sum(u.count for u in sc.unknown.values()) + sc.unknown_dropped == 3000
    result = rank(sc)
    assert result["summary"]["unknown"] == 3000


def test_non_utf8_and_binary_input():
    sc = _scan(b"\xff\xfe\x00garbage\nImportError: libhccl.so: cannot open shared object file \xff\n")
    assert [g.entry.id for g in sc.groups.values()] == ["cann-library-not-found"]


def _peak_rss_kib(path: Path) -> tuple:
    code = (
        "import resource,sys;from npudoctor.cli.commands.triage import run_triage;"
        "from npudoctor.session.request import MachineRequest;"
        f"rc=run_triage([{str(path)!r}],MachineRequest(json=True),no_facts=True);"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    return json.loads(proc.stdout), int(proc.stderr.decode().strip().splitlines()[-1])


def test_large_log_constant_memory(tmp_path):
    """Peak RSS of a 60 MB triage is within a few MB of a 6 MB one: memory does not grow with the log."""
    block = (b"INFO step 123 loss 0.5 lr 1e-4 something something\n" * 2000) + b"EI0006 Getting socket times out\n"
    small, big = tmp_path / "small.log", tmp_path / "big.log"
    small.write_bytes(block * 60)
    with open(big, "wb") as fh:
        for _ in range(600):
            fh.write(block)
    assert big.stat().st_size > 60_000_000
    doc_small, peak_small = _peak_rss_kib(small)
    doc_big, peak_big = _peak_rss_kib(big)
    assert _group(doc_small, "ei0006-socket-timeout")["count"] == 60
    assert _group(doc_big, "ei0006-socket-timeout")["count"] == 600
    assert doc_big["sources"][0]["lines"] == 600 * 2001
    assert peak_big - peak_small < 16 * 1024, (peak_small, peak_big)
