"""``npudoctor health``: the container health check.

A fast subset of ``check`` (the probes marked ``QUICK``: host, Python packages by
metadata, CANN, driver, environment, devices, container) judged by the same rules.

Contract (Docker ``HEALTHCHECK`` and Kubernetes exec probes):

* exit status **0** healthy, **1** unhealthy — nothing else, ever: a bad option, an
  internal error or a blown time budget is 1 with a reason (Docker reserves 2);
* one short line per problem on stdout (Docker keeps the tail of the output), or a
  JSON document with ``--json``;
* ``--timeout SECONDS`` is a hard total budget (default 0.9 s, inside Kubernetes'
  1 s default probe timeout): when it runs out, the check reports the step that was
  running and exits 1 at once;
* ``--cache-ttl SECONDS`` reuses a result younger than that and says how old it is.

This module is imported without Typer or rich (see :mod:`npudoctor.entry`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import signal
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

DEFAULT_TIMEOUT = 0.9
#: Longest problem line printed (Docker keeps only the tail of the output).
LINE_LIMIT = 240
_FAIL_ON = ("error", "warning")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage problems as *unhealthy* (exit 1), never exit 2."""

    def error(self, message: str) -> NoReturn:  # type: ignore[name-defined]  # noqa: F821
        print(f"unhealthy: bad health-check option: {message}")
        sys.exit(1)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="npudoctor health",
        description=(
            "Fast container health check: devices visible and openable, driver files mounted, "
            "chips healthy, CANN environment applied, torch/torch_npu/CANN paired. "
            "Exit codes: 0 healthy, 1 unhealthy (also for bad options, internal errors and timeouts)."
        ),
    )
    parser.add_argument("--root", metavar="DIR", help="inspect DIR as if it were /")
    parser.add_argument("--python", metavar="PATH", help="inspect this interpreter's packages")
    parser.add_argument("--user", metavar="NAME|UID", help="judge device access for this account")
    parser.add_argument(
        "--env-file", metavar="FILE", help="diagnose the environment in FILE (NAME=value lines) instead of this one"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="hard total budget (default 0.9)"
    )
    parser.add_argument("--require", type=int, default=None, metavar="N", help="at least N NPU chips must be visible")
    parser.add_argument("--skip", action="append", default=[], metavar="AREA", help="leave out an area (repeatable)")
    parser.add_argument("--only", action="append", default=[], metavar="AREA", help="check only these areas")
    parser.add_argument("--fail-on", choices=_FAIL_ON, default="error", help="severity that makes it unhealthy")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODE", help="silence a finding code")
    parser.add_argument("--matrix", metavar="FILE", help="use this matrix file")
    parser.add_argument("--no-commands", action="store_true", help="run no external command (npu-smi)")
    parser.add_argument(
        "--exec-env",
        action="store_true",
        help="judge the environment `npudoctor exec` gives the workload (the CANN set_env.sh variables "
        "applied), not this process's: use it when the container's entrypoint is `npudoctor exec`",
    )
    parser.add_argument(
        "--cache-ttl", type=float, default=0.0, metavar="SECONDS", help="reuse a result younger than this"
    )
    return parser


def _areas(values: Sequence[str]) -> List[str]:
    """Area names from repeated/comma-separated ``--only``/``--skip`` values; raises
    ``ValueError`` for a name that is no area (a typo must not switch a check off)."""
    from npudoctor.findings import AREAS, EXTRA_SECTIONS

    names = [a.strip() for v in values for a in v.split(",") if a.strip()]
    unknown = [n for n in names if n not in AREAS and n not in EXTRA_SECTIONS]
    if unknown:
        raise ValueError(f"unknown area {', '.join(unknown)} (areas: {', '.join(AREAS + EXTRA_SECTIONS)})")
    return names


def _cache_path(argv: Sequence[str]) -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    key = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
    return os.path.join(base, f"npudoctor-health-{os.getuid()}-{key}.json")


def _read_cache(path: str, ttl: float) -> Optional[Dict[str, Any]]:
    try:
        st = os.stat(path)
        age = time.time() - st.st_mtime
        if age > ttl or age < 0:
            return None
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None  # planted or writable by others: not our result, do not trust it
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("status") not in ("healthy", "unhealthy"):
        return None
    if not isinstance(doc.get("problems", []), list):
        return None
    doc["cache_age_s"] = round(age, 1)
    return doc


def evaluate_health(
    args: argparse.Namespace, state: Dict[str, Any], environ: Optional[Mapping[str, str]] = None
) -> Dict[str, Any]:
    """Run the quick probes and rules; return the result document.

    ``args``: options as parsed by :func:`build_parser`.  ``state["step"]`` is updated
    with the section being probed so that a blown budget can name it.  ``environ``: the
    environment to diagnose (default ``os.environ``; ``npudoctor exec`` passes the one
    it will run the command with).  Raises whatever the engine raises (the caller turns
    it into exit 1).  ``state["started"]`` (a ``time.monotonic()`` value), when given,
    is the moment the budget started (so that probe deadlines count import time too).
    """
    started = float(state.get("started") or time.monotonic())
    from npudoctor.config import load_ignores
    from npudoctor.engine import Options, collect, evaluate, load_rules
    from npudoctor.host import Host
    from npudoctor.knowledge.matrix import MatrixError, load_matrix

    if args.root and not os.path.isdir(args.root):
        raise ValueError(f"--root {args.root}: not a directory")
    given_environ = environ is not None
    if not given_environ and getattr(args, "env_file", None):
        from npudoctor.parsers.envfile import load_env_file

        environ = load_env_file(args.env_file, os.environ.get("PATH", "/usr/bin:/bin"))
    if not given_environ and getattr(args, "exec_env", False):
        from npudoctor.launch import plan_environment

        state["step"] = "computing the entrypoint environment"
        environ = plan_environment(root=args.root, environ=environ, python=args.python).environ
    if args.user:
        from npudoctor.probes.host import user_problem

        problem = user_problem(Host(root=args.root or "/", environ=environ), args.user)
        if problem:
            raise ValueError(problem)
    options = Options(
        python=args.python,
        user=args.user,
        quick=True,
        command_timeout=max(0.1, args.timeout * 0.6),
        deadline=started + args.timeout * 0.85,
        only=set(_areas(args.only)),
        skip=set(_areas(args.skip)),
        require_devices=args.require,
        matrix_path=args.matrix,
    )
    options.progress = lambda section: state.__setitem__("step", f"probing {section}")
    host = Host(root=args.root or "/", environ=environ, commands=not args.no_commands)
    # Parsing the matrix (TOML + validation) and importing the rule modules cost more
    # than all quick probes together; they run while the probes wait for npu-smi, so
    # that a slow npu-smi does not push them (and the finding that names npu-smi) past
    # the budget.
    loaded: Dict[str, Any] = {}

    def load() -> None:
        with contextlib.suppress(Exception):  # evaluate() imports them again and reports a failure
            load_rules()
        try:
            loaded["matrix"] = load_matrix(args.matrix)
        except MatrixError as exc:
            loaded["error"] = exc
        except Exception as exc:  # a matrix bug must not cost the health verdict
            loaded["error"] = MatrixError(f"{type(exc).__name__}: {exc}")

    loader = threading.Thread(target=load, name="npudoctor-health-matrix", daemon=True)
    loader.start()
    snapshot = collect(host, options)
    state["step"] = "loading the matrix"
    loader.join()
    matrix = loaded.get("matrix")
    if "error" in loaded and args.matrix:
        raise ValueError(str(loaded["error"]))
    state["step"] = "judging"
    ignores, _errors = load_ignores()
    findings = evaluate(snapshot, matrix, options, ignore=list(args.ignore) + ignores)
    failing = [f for f in findings if f.severity == "error" or (args.fail_on == "warning" and f.severity == "warning")]
    devices = snapshot.section("devices")
    return {
        "status": "unhealthy" if failing else "healthy",
        "problems": [_line(f) for f in failing],
        "findings": [f.to_dict() for f in findings],
        "chips": len(devices.get("chips") or []),
        "duration_s": round(time.monotonic() - started, 3),
        "summary": _summary(snapshot),
    }


def _line(finding: Any) -> str:
    return printable(f"{finding.code} {finding.title}")


def printable(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` as one short terminal-safe line: control characters (garbled command
    output quoted in a title) become ``?``, whitespace runs one space, at most ``limit``
    characters."""
    out = "".join(ch if ch.isprintable() else (" " if ch.isspace() else "?") for ch in str(text))
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def _summary(snapshot: Any) -> str:
    bits = []
    chips = snapshot.section("devices").get("chips") or []
    if chips:
        bits.append(f"{len(chips)} NPU chip(s)")
    cann = snapshot.section("cann").get("selected") or {}
    if cann.get("version"):
        bits.append(f"CANN {cann['version']}")
    npu = (snapshot.section("packages").get("installed") or {}).get("torch-npu") or []
    if npu:
        bits.append(f"torch_npu {npu[0].get('version')}")
    return ", ".join(bits)


def _emit(doc: Dict[str, Any], as_json: bool) -> int:
    healthy = doc["status"] == "healthy"
    if as_json:
        print(json.dumps(doc, ensure_ascii=False))
    else:
        age = f" (cached result, {doc['cache_age_s']} s old)" if "cache_age_s" in doc else ""
        if healthy:
            summary = f": {doc['summary']}" if doc.get("summary") else ""
            print(f"healthy{summary}{age}")
        else:
            for line in doc["problems"]:
                print(f"unhealthy: {line}{age}")
    sys.stdout.flush()
    return 0 if healthy else 1


def kill_children() -> None:
    """SIGKILL the process group of every child of this process (commands run by
    :meth:`npudoctor.host.Host.run` lead their own session), so that leaving on a blown
    budget does not orphan a wedged ``npu-smi`` that ignores SIGTERM.  Children are read
    from ``/proc/self/task/<tid>/children`` (Linux >= 3.5); never raises."""
    pids = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/children", encoding="ascii") as fh:
                    pids.update(int(p) for p in fh.read().split())
            except (OSError, ValueError):
                continue
    except OSError:
        return
    for pid in pids:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


def main(argv: Sequence[str]) -> int:
    """Run the health check with ``argv`` (without the ``health`` word); returns 0/1.

    The work runs in a daemon thread; if it does not finish within ``--timeout`` the
    process reports the step in progress, kills the commands still running and leaves
    with status 1 (``os._exit``, so a wedged probe cannot hold it).  Any unexpected
    failure is "unhealthy" with a reason too (never a traceback, never another status).
    """
    try:
        return _main(argv)
    except SystemExit as exc:  # argparse --help (0) or a usage error (1, see _Parser)
        return 0 if exc.code in (0, None) else 1
    except BaseException as exc:  # KeyboardInterrupt, BrokenPipeError, a bug
        with contextlib.suppress(Exception):
            print(printable(f"unhealthy: npudoctor failed: {type(exc).__name__}: {exc}"))
        return 1


def _main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= 3600):
        print("unhealthy: bad health-check option: --timeout must be a number of seconds in (0, 3600]")
        return 1
    if not math.isfinite(args.cache_ttl) or args.require is not None and args.require < 0:
        print("unhealthy: bad health-check option: --cache-ttl and --require must be finite and not negative")
        return 1
    try:
        _areas(args.only + args.skip)
    except ValueError as exc:
        print(f"unhealthy: bad health-check option: {exc}")
        return 1
    cache = _cache_path(argv) if args.cache_ttl > 0 else None
    if cache:
        cached = _read_cache(cache, args.cache_ttl)
        if cached is not None:
            return _emit(cached, args.json)
    state: Dict[str, Any] = {"step": "starting", "started": time.monotonic()}
    box: Dict[str, Any] = {}

    def work() -> None:
        try:
            box["doc"] = evaluate_health(args, state)
        except BaseException as exc:  # any failure is "unhealthy", with the reason
            # ValueError: a bad option value found while working (--root, --user, --env-file)
            box["error"] = (
                f"bad health-check option: {exc}"
                if isinstance(exc, ValueError)
                else (f"npudoctor failed: {type(exc).__name__}: {exc}")
            )

    worker = threading.Thread(target=work, name="npudoctor-health", daemon=True)
    worker.start()
    worker.join(args.timeout)
    if worker.is_alive():
        doc = {
            "status": "unhealthy",
            "problems": [f"HOST090 health check exceeded its {args.timeout:g} s budget while {state['step']}"],
            "findings": [],
            "duration_s": args.timeout,
        }
        _emit(doc, args.json)
        kill_children()
        os._exit(1)
    if "error" in box:
        doc = {"status": "unhealthy", "problems": [printable(box["error"])], "findings": []}
        return _emit(doc, args.json)
    doc = box["doc"]
    if cache:
        try:
            from npudoctor.snapshot import atomic_write

            atomic_write(cache, json.dumps(doc))
        except OSError:
            pass
    return _emit(doc, args.json)
