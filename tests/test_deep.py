"""The deep probe (`check --deep`) against real small fake `torch`/`torch_npu` packages on a
PYTHONPATH we control: one that works, one that hangs, one that segfaults, one that
floods stderr, one that cannot find libhccl.so, one without devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import clirun
from strict_facts import undeclared

from npudoctor.context import Options, ProbeContext
from npudoctor.facts import Facts
from npudoctor.host import Host
from npudoctor.probes import deep
from npudoctor.rules.deep import deep_signatures

REPO = Path(__file__).resolve().parent.parent

FAKE_TORCH = """
__version__ = "2.1.0"
class _T:
    def __init__(self, v):
        self.v = v
    def __add__(self, other):
        return _T(self.v + other.v)
    def sum(self):
        return _T(self.v * 4)
    def cpu(self):
        return self
    def item(self):
        return float(self.v)
def ones(*shape, device=None):
    if device is not None and not str(device).startswith("npu:"):
        raise RuntimeError("bad device " + str(device))
    return _T(1.0)
class version:
    cann = "8.0.0"
"""

NPU_OK = """
import torch, types
__version__ = "2.1.0.post10"
torch.npu = types.SimpleNamespace(
    is_available=lambda: {available},
    device_count=lambda: {count},
    get_device_name=lambda i: "Ascend910B3",
    synchronize=lambda i=None: None,
)
"""


def _fake(tmp_path: Path, torch_npu_body: str) -> Path:
    site = tmp_path / "fake-site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH, encoding="utf-8")
    (site / "torch_npu").mkdir()
    (site / "torch_npu" / "__init__.py").write_text(textwrap.dedent(torch_npu_body), encoding="utf-8")
    return site


def check_deep(site: Path, *extra: str, timeout: float = 120):
    # A process: without --python npudoctor judges the interpreter it runs in, whose
    # PYTHONPATH here holds the fake torch; --deep imports it in a child that may hang or die.
    # This checkout's npudoctor, not whichever one the interpreter has installed.
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{site}{os.pathsep}{REPO}", "HOME": "/root"}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "check", "--deep", "--json", *extra],
        capture_output=True,
        timeout=timeout,
        env=env,
        cwd=str(site.parent),
    )
    elapsed = time.monotonic() - start
    doc = json.loads(proc.stdout)
    assert undeclared(doc["facts"]) == []  # the typed views declare every key a --deep run writes
    return proc.returncode, doc, elapsed


def _deep_findings(doc):
    return [f for f in doc["findings"] if f["area"] == "deep"]


def test_working_stack_passes_every_step(tmp_path):
    site = _fake(tmp_path, NPU_OK.format(available=True, count=2))
    _, doc, _ = check_deep(site)
    d = doc["facts"]["deep"]
    assert d["outcome"] == "ok" and d["interpreter"] == sys.executable
    assert [s["name"] for s in d["steps"]] == list(deep.STEPS)
    assert all(s["status"] == "ok" for s in d["steps"])
    assert (d["torch_version"], d["torch_npu_version"], d["cann"], d["device_count"]) == (
        "2.1.0",
        "2.1.0.post10",
        "8.0.0",
        2,
    )
    assert d["devices"] == [
        {"index": 0, "name": "Ascend910B3", "tensor_op": "ok", "synchronize": "ok"},
        {"index": 1, "name": "Ascend910B3", "tensor_op": "ok", "synchronize": "ok"},
    ]
    (f,) = _deep_findings(doc)
    assert f["code"] == "DEEP008" and "2 NPU(s) (Ascend910B3)" in f["title"]


def test_no_device_is_reported(tmp_path):
    site = _fake(tmp_path, NPU_OK.format(available=False, count=0))
    _, doc, _ = check_deep(site)
    d = doc["facts"]["deep"]
    assert d["outcome"] == "ok" and d["is_available"] is False and d["device_count"] == 0
    assert {s["name"]: s["status"] for s in d["steps"]}["tensor_op"] == "skipped"
    (f,) = _deep_findings(doc)
    assert f["code"] == "DEEP003" and f["severity"] == "error"


def test_hang_is_killed_at_the_deadline(tmp_path):
    site = _fake(tmp_path, "import time\ntime.sleep(600)\n")
    code, doc, elapsed = check_deep(site, "--deep-timeout", "3")
    d = doc["facts"]["deep"]
    assert d["outcome"] == "timed_out" and d["hung_step"] == "import_torch_npu"
    assert {s["name"]: s["status"] for s in d["steps"]} == {"import_torch": "ok", "import_torch_npu": "running"}
    assert 3 <= d["duration"] < 8 and elapsed < 60
    (f,) = _deep_findings(doc)
    assert f["code"] == "DEEP006" and "import torch_npu" in f["title"] and code == 1


def test_segfault_is_a_fact(tmp_path):
    site = _fake(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    _, doc, elapsed = check_deep(site)
    d = doc["facts"]["deep"]
    assert d["outcome"] == "crashed" and d["signal"] == "SIGSEGV" and d["crashed_step"] == "import_torch_npu"
    assert "Fatal Python error: Segmentation fault" in d["stderr_head"]  # faulthandler's stack
    (f,) = _deep_findings(doc)
    assert f["code"] == "DEEP005" and "SIGSEGV" in f["title"] and elapsed < 60


def test_stderr_flood_is_bounded_and_the_error_still_named(tmp_path):
    body = """
    import sys
    chunk = "x" * 1023 + "\\n"
    for _ in range(10 * 1024):
        sys.stderr.write(chunk)
    sys.stderr.flush()
    raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")
    """
    site = _fake(tmp_path, body)
    _, doc, elapsed = check_deep(site)
    d = doc["facts"]["deep"]
    assert d["stderr_bytes"] == 10 * 1024 * 1024 and d["output_truncated"] is True
    assert len(d["stderr_head"]) <= deep.KEEP and len(d["stderr_tail"]) <= deep.KEEP
    assert d["outcome"] == "failed" and d["failed_step"] == "import_torch_npu"
    assert d["error"] == "ImportError: libhccl.so: cannot open shared object file: No such file or directory"
    assert [s["id"] for s in deep_signatures(Facts({"deep": d}).deep)][:1] == ["cann-library-not-found"]
    assert len(json.dumps(doc)) < 1_000_000
    assert elapsed < 60


def test_libhccl_failure_is_tied_to_the_static_no_cann_finding(tmp_path):
    """With no CANN on this machine the import failure confirms CANN001 instead of
    being a second error."""
    site = _fake(
        tmp_path, 'raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")\n'
    )
    _, doc, _ = check_deep(site)
    codes = {f["code"]: f for f in doc["findings"]}
    (d,) = _deep_findings(doc)
    if "CANN001" in codes:
        assert d["code"] == "DEEP002" and d["severity"] == "info"
        assert "CANN001" in d["data"]["explained_by"]
        assert any(
            c.startswith("deep probe: import torch_npu failed with ImportError: libhccl.so")
            for c in codes["CANN001"]["confirmed_by"]
        )
    else:  # a machine with CANN installed: the failure stands on its own
        assert d["code"] == "DEEP002" and d["severity"] == "error"


def test_root_mode_records_that_nothing_can_run(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    ctx = ProbeContext(host=Host(root=str(root)), options=Options(deep=True), facts={})
    facts = deep.probe(ctx)
    assert facts["ran"] is False and facts["outcome"] == "not_run" and "--root" in facts["reason"]
    proc = clirun.npudoctor("check", "--deep", "--root", str(root), "--json")
    doc = json.loads(proc.stdout)
    assert [f["code"] for f in _deep_findings(doc)] == ["DEEP007"]


def test_missing_interpreter_and_no_commands():
    host = Host()
    ctx = ProbeContext(host=host, options=Options(deep=True, python="/nonexistent/python"), facts={})
    assert deep.probe(ctx)["outcome"] == "not_run"
    ctx = ProbeContext(host=Host(commands=False), options=Options(deep=True), facts={})
    assert "commands disabled" in deep.probe(ctx)["reason"]


def test_partial_records_survive_a_kill():
    """summarize() works from whatever step lines arrived before the end."""
    raw = {
        "records": [
            {"event": "start", "step": "import_torch"},
            {"event": "end", "step": "import_torch", "status": "ok", "duration": 0.5, "value": {"version": "2.4.0"}},
            {"event": "start", "step": "import_torch_npu"},
        ],
        "stderr": deep._Capped(),
        "other": deep._Capped(),
        "returncode": -9,
        "timed_out": False,
        "error": None,
        "duration": 1.0,
    }
    facts = deep.summarize(raw, "/x/python", 10.0)
    assert (
        facts["outcome"] == "crashed" and facts["signal"] == "SIGKILL" and facts["crashed_step"] == "import_torch_npu"
    )
    assert facts["torch_version"] == "2.4.0"


def test_capped_keeps_head_and_tail():
    c = deep._Capped(keep=10)
    for i in range(100):
        c.add(b"%02d" % i)
    assert c.total == 200 and bytes(c.head) == b"0001020304" and bytes(c.tail) == b"9596979899" and c.truncated
