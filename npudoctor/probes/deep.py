"""The deep probe: really import torch and torch_npu, in a child process, with a deadline.

Section ``deep`` (DEEP: runs only with ``npudoctor check --deep``).  The child
is the target interpreter -- ``--python PATH``, else ``facts["python"]["executable"]``
when the python probe ran live, else ``sys.executable`` -- started with the diagnosed
environment and working directory, ``-X faulthandler`` (a segfault prints its Python
stack), ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` unless set (so ``import torch`` does not
import torch_npu: the two steps stay apart) and stdin closed.  It runs :data:`CHILD_SCRIPT` (stdlib + torch only, Python
3.7+), which prints one JSON line per step, flushed, prefixed with :data:`MARK`, so the
steps finished before a hang, a crash or a kill survive.  Steps, in order::

    import_torch      torch.__version__, torch.__file__
    import_torch_npu  torch_npu.__version__, torch.version.cann (when present)
    is_available      torch.npu.is_available()
    device_count      torch.npu.device_count(), names (torch.npu.get_device_name(i))
    tensor_op         a 2x2 tensor op on each visible device, copied back and checked
    synchronize       torch.npu.synchronize(i) on each device

A step that fails stops the rest (they are recorded as ``skipped``).  Output is read by
threads as it arrives: stdout lines without the mark and stderr are kept as head+tail
(:data:`KEEP` bytes each) with a byte count, so a child printing gigabytes costs
constant memory.  (``Host.run`` keeps at most 4 MiB per stream but reads all of it
first, so it is not used here.)  On the deadline the child's process group is killed.

Keys::

    ran           bool: the child was started
    reason        why it was not run (``--root``: no interpreter of the diagnosed machine
                  can be run here; ``--from``; commands disabled; interpreter missing;
                  torch not installed in it -- see :func:`torch_not_installed`)
    torch_installed  False when the probe was not run because the interpreter has no
                  torch (absent otherwise)
    interpreter   path of the interpreter run
    timeout       the deadline (s);  duration: wall time (s)
    outcome       "ok" | "failed" (a step raised) | "crashed" (killed by a signal:
                  segfault, abort) | "timed_out" (killed at the deadline) | "exited"
                  (the child ended without finishing, e.g. os._exit/sys.exit in an import)
                  | "not_run" | "error" (could not be started)
    returncode    int | None;  signal: "SIGSEGV" | None (when killed by a signal)
    hung_step     the step running when the deadline hit (None otherwise)
    crashed_step  the step running when a signal killed the child
    steps         [{name, status: "ok"|"failed"|"skipped"|"running", duration,
                    error_type, error, traceback, value}]
    failed_step   name of the first failed step | None;  error: its error text
    torch_version, torch_npu_version, cann (torch.version.cann), is_available,
    device_count, devices [{index, name, tensor_op: "ok"|error, synchronize: "ok"|error}]
    (the known signatures in the failure text and stderr are matched and graded by
    rules/deep.py ``deep_signatures`` on every run; older snapshots' ``signatures`` are ignored)
    stderr_head, stderr_tail   text (at most KEEP bytes each);  stderr_bytes: total
    stdout_bytes  bytes of non-step stdout (stdout_text: up to 8 KiB of it);  output_truncated: bool (something was dropped)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from npudoctor.context import ProbeContext
from npudoctor.hostproc import track
from npudoctor.parsers import jsontext

SECTION = "deep"
NEEDS = ("python", "packages")
SLOW = True
DEEP = True

#: Prefix of the child's step lines on stdout.
MARK = "@@npudoctor-deep@@ "
#: Bytes of head and of tail kept of each output stream.
KEEP = 32 << 10
#: Longest step line accepted (bytes); a longer one is dropped as garbage.
MAX_STEP_LINE = 256 << 10

CHILD_SCRIPT = r"""
import json, sys, time, traceback
MARK = "@@npudoctor-deep@@ "
def emit(rec):
    sys.stdout.write(MARK + json.dumps(rec, default=str) + "\n")
    sys.stdout.flush()
def step(name, fn):
    emit({"event": "start", "step": name})
    t0 = time.time()
    try:
        value = fn()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.format_exc()
        emit({"event": "end", "step": name, "status": "failed", "duration": time.time() - t0,
              "error_type": type(exc).__name__, "error": str(exc)[:4000], "traceback": tb[-6000:]})
        return None, False
    emit({"event": "end", "step": name, "status": "ok", "duration": time.time() - t0, "value": value})
    return value, True
S = {}
def import_torch():
    import torch
    S["torch"] = torch
    return {"version": getattr(torch, "__version__", None), "file": getattr(torch, "__file__", None)}
def import_torch_npu():
    import torch_npu
    S["torch_npu"] = torch_npu
    ver = getattr(S["torch"], "version", None)
    return {"version": getattr(torch_npu, "__version__", None), "file": getattr(torch_npu, "__file__", None),
            "cann": getattr(ver, "cann", None)}
def is_available():
    return bool(S["torch"].npu.is_available())
def device_count():
    npu = S["torch"].npu
    n = int(npu.device_count())
    names = []
    for i in range(n):
        try:
            names.append(str(npu.get_device_name(i)))
        except Exception as exc:
            names.append("<error: %s: %s>" % (type(exc).__name__, exc))
    S["n"] = n
    return {"count": n, "names": names}
def tensor_op():
    torch = S["torch"]
    out = []
    for i in range(S["n"]):
        dev = "npu:%d" % i
        x = torch.ones(2, 2, device=dev)
        y = (x + x).sum().cpu().item()
        if y != 8.0:
            raise RuntimeError("device %s computed %r for sum(ones(2,2)*2), expected 8.0" % (dev, y))
        out.append(dev)
    return out
def synchronize():
    npu = S["torch"].npu
    for i in range(S["n"]):
        npu.synchronize(i)
    return S["n"]
plan = [("import_torch", import_torch), ("import_torch_npu", import_torch_npu), ("is_available", is_available),
        ("device_count", device_count), ("tensor_op", tensor_op), ("synchronize", synchronize)]
stop = False
for name, fn in plan:
    if stop:
        emit({"event": "end", "step": name, "status": "skipped"})
        continue
    value, ok = step(name, fn)
    if not ok:
        stop = True
    elif name == "device_count" and not value["count"]:
        for rest in ("tensor_op", "synchronize"):
            emit({"event": "end", "step": rest, "status": "skipped", "reason": "no device"})
        break
emit({"event": "done"})
"""

STEPS = ("import_torch", "import_torch_npu", "is_available", "device_count", "tensor_op", "synchronize")


class _Capped:
    """Head + tail of a byte stream with a total count: constant memory."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.keep:
                del self.tail[: len(self.tail) - self.keep]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")


def _read_stderr(stream: Any, sink: _Capped) -> None:
    try:
        while True:
            data = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not data:
                break
            sink.add(data)
    except (OSError, ValueError):
        pass


def _read_stdout(stream: Any, records: List[Dict[str, Any]], other: _Capped) -> None:
    mark = MARK.encode()
    partial = bytearray()
    try:
        while True:
            data = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not data:
                break
            partial += data
            while True:
                nl = partial.find(b"\n")
                if nl < 0:
                    if len(partial) > MAX_STEP_LINE:
                        other.add(bytes(partial))
                        partial.clear()
                    break
                line = bytes(partial[: nl + 1])
                del partial[: nl + 1]
                if line.startswith(mark):
                    try:
                        rec = jsontext.loads(line[len(mark) :].decode("utf-8", "replace"))
                    except ValueError:
                        other.add(line)
                        continue
                    if isinstance(rec, dict):
                        records.append(rec)
                else:
                    other.add(line)
    except (OSError, ValueError):
        pass
    if partial:
        other.add(bytes(partial))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            proc.kill()


def run_child(
    interpreter: str,
    env: Dict[str, str],
    timeout: float,
    cwd: Optional[str] = None,
    progress: Any = None,
) -> Dict[str, Any]:
    """Run :data:`CHILD_SCRIPT` in ``interpreter`` and return the raw outcome:
    ``{records, stderr (_Capped), other (_Capped), returncode, timed_out, error,
    duration}``.  Never raises for a missing, hanging or crashing interpreter."""
    records: List[Dict[str, Any]] = []
    stderr = _Capped()
    other = _Capped()
    out: Dict[str, Any] = {"records": records, "stderr": stderr, "other": other, "returncode": None}
    out.update(timed_out=False, error=None, duration=0.0)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [interpreter, "-X", "faulthandler", "-c", CHILD_SCRIPT],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd if cwd and os.path.isdir(cwd) else None,
            start_new_session=True,
        )
    except OSError as exc:
        out["error"] = f"cannot start {interpreter}: {exc.strerror or exc}"
        return out
    track(proc.pid)  # ours: not an orphan for Host.run's reaping
    threads = [
        threading.Thread(target=_read_stdout, args=(proc.stdout, records, other), daemon=True),
        threading.Thread(target=_read_stderr, args=(proc.stderr, stderr), daemon=True),
    ]
    for t in threads:
        t.start()
    deadline = start + max(timeout, 0.1)
    shown = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            out["timed_out"] = True
            _kill_group(proc)
            break
        try:
            proc.wait(timeout=min(0.2, remaining))
            break
        except subprocess.TimeoutExpired:
            pass
        if progress is not None:
            starts = [r["step"] for r in list(records) if r.get("event") == "start"]
            if len(starts) > shown:
                shown = len(starts)
                progress(f"deep: {starts[-1]}")
    try:
        proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        out["error"] = "the child did not die after SIGKILL (abandoned)"
    # Output may still flow from grandchildren that kept the pipes open: do not wait long.
    for t in threads:
        t.join(timeout=1.0)
    _kill_group(proc)
    track(proc.pid, on=False)
    out["returncode"] = proc.returncode
    out["duration"] = time.monotonic() - start
    return out


def _signal_name(returncode: Optional[int]) -> Optional[str]:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def summarize(raw: Dict[str, Any], interpreter: str, timeout: float) -> Dict[str, Any]:
    """Turn :func:`run_child`'s raw outcome into the ``deep`` facts (see module doc)."""
    records: List[Dict[str, Any]] = list(raw["records"])
    steps: Dict[str, Dict[str, Any]] = {}
    running: Optional[str] = None
    done = False
    for rec in records:
        name = rec.get("step")
        if rec.get("event") == "done":
            done = True
        elif rec.get("event") == "start" and name in STEPS:
            running = name
            steps[name] = {"name": name, "status": "running"}
        elif rec.get("event") == "end" and name in STEPS:
            entry = {
                k: rec.get(k) for k in ("status", "duration", "error_type", "error", "traceback", "value", "reason")
            }
            entry["name"] = name
            duration = entry.get("duration")
            if isinstance(duration, (int, float)):
                entry["duration"] = round(float(duration), 3)
            steps[name] = {k: v for k, v in entry.items() if v is not None}
            if running == name:
                running = None
    ordered = [steps[n] for n in STEPS if n in steps]
    failed = next((s for s in ordered if s.get("status") == "failed"), None)
    sig = _signal_name(raw["returncode"])
    if raw.get("error") and raw["returncode"] is None and not raw["timed_out"]:
        outcome = "error"
    elif raw["timed_out"]:
        outcome = "timed_out"
    elif sig:
        outcome = "crashed"
    elif failed:
        outcome = "failed"
    elif done:
        outcome = "ok"
    else:
        outcome = "exited"
    stderr: _Capped = raw["stderr"]
    other: _Capped = raw["other"]
    facts: Dict[str, Any] = {
        "ran": raw.get("error") is None or raw["returncode"] is not None,
        "reason": raw.get("error"),
        "interpreter": interpreter,
        "timeout": timeout,
        "duration": round(raw["duration"], 3),
        "outcome": outcome,
        "returncode": raw["returncode"],
        "signal": sig,
        "hung_step": running if outcome == "timed_out" else None,
        "crashed_step": running if outcome == "crashed" else None,
        "steps": ordered,
        "failed_step": failed["name"] if failed else None,
        "error": (f"{failed.get('error_type')}: {failed.get('error')}" if failed else None),
        "stderr_head": bytes(stderr.head).decode("utf-8", "replace"),
        "stderr_tail": bytes(stderr.tail).decode("utf-8", "replace"),
        "stderr_bytes": stderr.total,
        "stdout_bytes": other.total,
        "stdout_text": other.text()[: 8 << 10],
        "output_truncated": stderr.truncated or other.truncated,
    }
    values = {s["name"]: s.get("value") for s in ordered if s.get("status") == "ok"}
    torch_v = values.get("import_torch") or {}
    npu_v = values.get("import_torch_npu") or {}
    count_v = values.get("device_count") or {}
    facts["torch_version"] = torch_v.get("version") if isinstance(torch_v, dict) else None
    facts["torch_npu_version"] = npu_v.get("version") if isinstance(npu_v, dict) else None
    facts["cann"] = npu_v.get("cann") if isinstance(npu_v, dict) else None
    facts["is_available"] = values.get("is_available")
    facts["device_count"] = count_v.get("count") if isinstance(count_v, dict) else None
    names = count_v.get("names", []) if isinstance(count_v, dict) else []
    op = steps.get("tensor_op", {})
    sync = steps.get("synchronize", {})
    facts["devices"] = [
        {
            "index": i,
            "name": name,
            "tensor_op": "ok" if op.get("status") == "ok" else op.get("error") or op.get("status"),
            "synchronize": "ok" if sync.get("status") == "ok" else sync.get("error") or sync.get("status"),
        }
        for i, name in enumerate(names)
    ]
    return facts


def _not_run(reason: str, interpreter: Optional[str] = None) -> Dict[str, Any]:
    return {
        "ran": False,
        "reason": reason,
        "interpreter": interpreter,
        "outcome": "not_run",
        "steps": [],
    }


def _same_file(a: Any, b: Any) -> bool:
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def torch_not_installed(facts: Dict[str, Any], interpreter: str) -> bool:
    """True when the static facts show that ``interpreter`` has no torch to import, so
    the child would only fail with ``No module named 'torch'``.

    Decided from ``facts["packages"]["installed"]`` (probes/packages.py: the dist-infos
    on the interpreter's sys.path) -- no ``torch`` record -- and, when present,
    ``facts["python"]["shadowing"]["torch"]["origin"]`` (probes/python.py: the directory
    import would pick, metadata or not) being empty, so a torch copied or put on
    PYTHONPATH without metadata still gets tried.  False (try it) whenever the packages
    facts are absent, were skipped, or describe another interpreter."""
    packages = facts.get("packages")
    if not isinstance(packages, dict) or packages.get("skipped"):
        return False
    installed = packages.get("installed")
    if not isinstance(installed, dict):
        return False
    scanned_for = packages.get("interpreter")
    if scanned_for is not None and not _same_file(scanned_for, interpreter):
        return False
    if any(str(name).lower() == "torch" for name in installed):
        return False
    python = facts.get("python") if isinstance(facts.get("python"), dict) else {}
    shadowing = (python or {}).get("shadowing")
    torch_origin = shadowing.get("torch") if isinstance(shadowing, dict) else None
    return not (isinstance(torch_origin, dict) and torch_origin.get("origin"))


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    """Run the import probe in the target interpreter (see the module docstring)."""
    host, options = ctx.host, ctx.options
    if not host.live:
        return _not_run(
            "--root: the diagnosed machine's interpreter cannot be run from here "
            "(run `npudoctor check --deep` on that machine or inside that container)"
        )
    if not host.commands:
        return _not_run("commands disabled (--no-commands)")
    py_facts = ctx.facts.get("python") if isinstance(ctx.facts.get("python"), dict) else {}
    interpreter = options.python or (py_facts or {}).get("executable") or sys.executable
    if not os.path.isfile(interpreter) or not os.access(interpreter, os.X_OK):
        return _not_run(f"interpreter {interpreter} is missing or not executable", interpreter)
    if torch_not_installed(ctx.facts, interpreter):
        out = _not_run(
            f"torch is not installed in {interpreter}: there is nothing to import "
            "(install the torch / torch_npu pair there, or give --python the interpreter that has them)",
            interpreter,
        )
        out["torch_installed"] = False
        return out
    timeout = float(options.deep_timeout or 120.0)
    if options.deadline is not None:
        timeout = max(1.0, min(timeout, options.deadline - time.monotonic()))
    env = dict(host.environ)
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONFAULTHANDLER"] = "1"
    # torch >= 2.5 imports torch_npu from `import torch` (backend autoload); keep the
    # steps apart so that a torch_npu failure is reported as such.
    env.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    if options.progress:
        options.progress("deep: starting the target interpreter")
    raw = run_child(interpreter, env, timeout, cwd=options.cwd or os.getcwd(), progress=options.progress)
    return summarize(raw, interpreter, timeout)
