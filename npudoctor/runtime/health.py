"""``npudoctor health``: the container health check.

The one quick evaluation (:func:`npudoctor.runtime.quick.evaluate_quick`: the probes
marked ``QUICK`` and every rule) under the one deadline mechanism
(:mod:`npudoctor.runtime.deadline`).

Contract (Docker ``HEALTHCHECK`` and Kubernetes exec probes):

* exit status **0** healthy, **1** unhealthy (``ExitStatus.OK``/``PROBLEMS``) -- nothing
  else, ever: a bad option, an internal error or a blown time budget is 1 with a reason
  (Docker reserves 2);
* one short line per problem on stdout (Docker keeps the tail of the output), or a
  JSON document with ``--json``;
* ``--timeout SECONDS`` is a hard total budget (default 0.9 s, inside Kubernetes'
  1 s default probe timeout): when it runs out, the check reports the step that was
  running and exits 1 at once;
* ``--cache-ttl SECONDS`` reuses a result younger than that and says how old it is;
* ``--from FILE`` judges a snapshot written by ``npudoctor collect`` instead of probing.

The argparse parser below is the fast path: :mod:`npudoctor.entry` dispatches ``health``
here before Typer or rich are imported.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Dict, NoReturn, Optional, Sequence, Tuple

from npudoctor.cli.request import ExitStatus, MachineRequest
from npudoctor.host import read_capped_text
from npudoctor.runtime.deadline import Budget, run_within
from npudoctor.runtime.quick import QuickRequest, QuickResult, areas, evaluate_quick, printable

DEFAULT_TIMEOUT = 0.9
_FAIL_ON = ("error", "warning")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage problems as *unhealthy* (exit 1), never exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"unhealthy: bad health-check option: {message}")
        sys.exit(ExitStatus.PROBLEMS)


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
    parser.add_argument(
        "--from", dest="from_file", metavar="FILE", help="judge a snapshot written by `npudoctor collect`"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    parser.add_argument(
        "--color", "--no-color", dest="color", action="store_const", const=None, help="accepted (the output is plain)"
    )
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


@dataclass(frozen=True)
class HealthOptions:
    """``npudoctor health``'s options, typed.

    ``machine``: ``--root --python --user --env-file --no-commands --from --json``.
    ``timeout``: the hard total budget, seconds in (0, 3600].  ``require``: chips that must
    be visible.  ``only``/``skip``: areas.  ``fail_on``: ``"error"`` or ``"warning"``.
    ``ignore``: codes or names to drop.  ``matrix``: a matrix file.  ``exec_env``: judge
    the environment ``npudoctor exec`` would give the workload.  ``cache_ttl``: seconds a
    previous result may be reused (0: never).
    """

    machine: MachineRequest = field(default_factory=MachineRequest)
    timeout: float = DEFAULT_TIMEOUT
    require: Optional[int] = None
    only: Tuple[str, ...] = ()
    skip: Tuple[str, ...] = ()
    fail_on: str = "error"
    ignore: Tuple[str, ...] = ()
    matrix: Optional[str] = None
    exec_env: bool = False
    cache_ttl: float = 0.0

    def problem(self) -> Optional[str]:
        """Why these options cannot be honoured (the reason of a "bad health-check
        option"), or ``None``."""
        if not (math.isfinite(self.timeout) and 0 < self.timeout <= 3600):
            return "--timeout must be a number of seconds in (0, 3600]"
        if not math.isfinite(self.cache_ttl) or self.require is not None and self.require < 0:
            return "--cache-ttl and --require must be finite and not negative"
        try:
            areas(self.only + self.skip)
        except ValueError as exc:
            return str(exc)
        return None


def options_from_args(args: argparse.Namespace) -> HealthOptions:
    """The typed options from :func:`build_parser`'s namespace."""
    return HealthOptions(
        machine=MachineRequest(
            root=args.root,
            python=args.python,
            user=args.user,
            env_file=args.env_file,
            no_commands=args.no_commands,
            from_file=args.from_file,
            json=args.json,
        ),
        timeout=args.timeout,
        require=args.require,
        only=tuple(args.only),
        skip=tuple(args.skip),
        fail_on=args.fail_on,
        ignore=tuple(args.ignore),
        matrix=args.matrix,
        exec_env=args.exec_env,
        cache_ttl=args.cache_ttl,
    )


def _cache_path(options: HealthOptions) -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    key = hashlib.sha256(json.dumps(dataclasses.asdict(options), sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(base, f"npudoctor-health-{os.getuid()}-{key}.json")


def _read_cache(path: str, ttl: float) -> Optional[Dict[str, Any]]:
    try:
        st = os.stat(path)
        age = time.time() - st.st_mtime
        if age > ttl or age < 0:
            return None
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None  # planted or writable by others: not our result, do not trust it
        doc = json.loads(read_capped_text(path, 1 << 20, what="health cache"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("status") not in ("healthy", "unhealthy"):
        return None
    if not isinstance(doc.get("problems", []), list):
        return None
    doc["cache_age_s"] = round(age, 1)
    return doc


def evaluate_health(options: HealthOptions, budget: Budget) -> Dict[str, Any]:
    """Run the quick evaluation; return the result document ``{"status": "healthy" |
    "unhealthy", "problems": [line], "findings": [finding dict], "chips": int,
    "duration_s": float, "summary": str}``.

    ``budget.step`` names the step in progress.  With ``options.exec_env`` the
    environment judged is the one ``npudoctor exec`` would run the workload in.  Raises
    ``ValueError`` for a bad option found while working (the caller reports it as a bad
    option); anything else propagates.
    """
    environ = None
    if options.exec_env:
        from npudoctor.runtime.environment import LaunchError, plan_environment

        budget.step = "computing the entrypoint environment"
        machine = dataclasses.replace(options.machine, user=None)
        try:
            environ = plan_environment(machine).environ
        except LaunchError as exc:
            raise ValueError(str(exc)) from None
    request = QuickRequest(
        machine=options.machine,
        environ=environ,
        only=frozenset(areas(options.only)),
        skip=frozenset(areas(options.skip)),
        require=options.require,
        ignore=options.ignore,
        matrix=options.matrix,
    )
    result: QuickResult = evaluate_quick(request, budget)
    failing = result.failing(options.fail_on)
    return {
        "status": "unhealthy" if failing else "healthy",
        "problems": [printable(f"{f.code} {f.title}") for f in failing],
        "findings": [f.to_dict() for f in result.findings],
        "chips": result.chips,
        "duration_s": round(budget.elapsed(), 3),
        "summary": result.summary,
    }


def _unhealthy(line: str, **extra: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {"status": "unhealthy", "problems": [printable(line)], "findings": []}
    doc.update(extra)
    return doc


def _emit(doc: Dict[str, Any], as_json: bool) -> ExitStatus:
    """Print the verdict; the one place that decides health's exit status."""
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
    return ExitStatus.OK if healthy else ExitStatus.PROBLEMS


def main(argv: Sequence[str]) -> ExitStatus:
    """Run the health check with ``argv`` (without the ``health`` word); returns
    ``ExitStatus.OK`` or ``ExitStatus.PROBLEMS``.

    Any unexpected failure is "unhealthy" with a reason too (never a traceback, never
    another status).  A blown budget leaves the process (see :func:`run_health`).
    """
    as_json = "--json" in argv
    try:
        args = build_parser().parse_args(list(argv))
        return run_health(options_from_args(args))
    except SystemExit as exc:  # argparse --help (0) or a usage error (1, see _Parser)
        return ExitStatus.OK if exc.code in (0, None) else ExitStatus.PROBLEMS
    except BaseException as exc:  # KeyboardInterrupt, BrokenPipeError, a bug
        with contextlib.suppress(Exception):
            return _emit(_unhealthy(f"npudoctor failed: {type(exc).__name__}: {exc}"), as_json)
        return ExitStatus.PROBLEMS


def run_health(options: HealthOptions) -> ExitStatus:
    """The health check with typed ``options``; prints the verdict, returns its status.

    The work runs under a :class:`~npudoctor.runtime.deadline.Budget` of
    ``options.timeout``; if it does not finish in time the verdict names the step in
    progress, the commands still running are killed and the process leaves with status 1
    (``os._exit``, so a wedged probe cannot hold it).
    """
    as_json = options.machine.json
    problem = options.problem()
    if problem:
        return _emit(_unhealthy(f"bad health-check option: {problem}"), as_json)
    cache = _cache_path(options) if options.cache_ttl > 0 else None
    if cache:
        cached = _read_cache(cache, options.cache_ttl)
        if cached is not None:
            return _emit(cached, as_json)
    budget = Budget(options.timeout)
    outcome = run_within(budget, lambda: evaluate_health(options, budget), name="npudoctor-health")
    if outcome.timed_out:
        _emit(_unhealthy(budget.over_budget_line(), duration_s=options.timeout), as_json)
        os._exit(ExitStatus.PROBLEMS)
    exc = outcome.error
    if exc is not None or outcome.value is None:
        # ValueError: a bad option value found while working (--root, --user, --env-file, --from)
        reason = (
            f"bad health-check option: {exc}"
            if isinstance(exc, ValueError)
            else f"npudoctor failed: {type(exc).__name__}: {exc}"
        )
        return _emit(_unhealthy(reason), as_json)
    doc = outcome.value
    if cache:
        try:
            from npudoctor.snapshot import atomic_write

            atomic_write(cache, json.dumps(doc))
        except OSError:
            pass
    return _emit(doc, as_json)
