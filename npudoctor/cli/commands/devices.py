"""``npudoctor devices``: the NPU chips of this machine (health, memory, processes,
topology) as a readable table, or ``--json``; plus the device and container findings.

Only the ``host``, ``python``, ``packages``, ``devices`` and ``container`` probes run
(fast); ``--from`` replays the same facts from a snapshot written by ``collect`` or
``check --json``.  The table is drawn by :mod:`npudoctor.report.devices`.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import typer

from npudoctor.cli.commands._common import (
    DeadlineOpt,
    EnvFileOpt,
    FromOpt,
    JsonOpt,
    MatrixOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    UserOpt,
    environment,
    judge,
    load_matrix_or_none,
    machine_request,
    usage_failure,
    warn,
)
from npudoctor.redact import conceal
from npudoctor.report.jsonout import write_json
from npudoctor.session.request import DEFAULT_DEADLINE, Environment, ExitStatus, MachineRequest, UsageError

SECTIONS = ("host", "python", "packages", "devices", "container")
AREAS = ("devices", "container")


def gather(
    request: MachineRequest,
    matrix_path: Optional[str] = None,
    environ: Any = None,
    ignores: Sequence[Tuple[str, str]] = (),
) -> Dict[str, Any]:
    """Collect (or replay) the device facts and judge them: ``{"source", "devices",
    "unread", "container", "findings", "ignored"}`` (the sections as their typed views read them, every
    declared field present; each chip with what the current matrix says it is; the device
    and container findings left out by ``ignores``, ``(code or name, where)`` as
    :func:`npudoctor.config.load_ignore_entries` reads ``.npudoctor.toml``, listed as ``check
    --json`` lists them).  ``environ``: npudoctor's own environment (``None``: this process's),
    replaced by the request's ``--env-file``.  Raises :class:`UsageError`."""
    from npudoctor.config import silenced
    from npudoctor.context import Options

    # the packages its rules judge by name read in full, the rest indexed by directory name
    options = Options(user=request.user, matrix_path=matrix_path, only=set(AREAS), index_packages=True)
    used: List[Any] = []  # the matrix judged with: it also names each chip below

    def matrix() -> Tuple[Any, Optional[str]]:
        loaded, error = load_matrix_or_none(matrix_path)
        used.append(loaded)
        return loaded, error

    ignored: List[Any] = []
    snapshot, findings = judge(
        request,
        options,
        sections=SECTIONS,
        environ=environ,
        matrix=matrix,
        ignore=[code for code, _where in ignores],
        ignored=ignored,
    )
    mode = snapshot.target.get("mode")
    source = {"from": f"snapshot {request.from_file}", "root": f"root {snapshot.target.get('root')}"}.get(
        str(mode), "this machine"
    )
    from npudoctor.facts import Facts
    from npudoctor.facts._typed import dump
    from npudoctor.knowledge.chips import chip_identity

    facts = Facts(snapshot.facts)
    devices = dump(facts.devices)  # the devices view in the snapshot's shape
    # what each chip is, judged with the current matrix
    devices["chips"] = [
        dict(chip, **{k: v for k, v in chip_identity(used[0], chip).items() if k != "known"})
        for chip in devices["chips"]
    ]
    return {
        "source": source,
        "devices": devices,
        # what of the devices section could not be read ("<section>: expected object, got str")
        "unread": facts.problems("devices"),
        "container": dump(facts.container),
        "findings": [f.to_dict() for f in findings if f.area in AREAS],
        "ignored": silenced([f for f in ignored if f.area in AREAS], ignores),
    }


def status(data: Dict[str, Any]) -> ExitStatus:
    """The exit status of ``devices``: PROBLEMS when a device or container error was found."""
    return ExitStatus.PROBLEMS if any(f["severity"] == "error" for f in data["findings"]) else ExitStatus.OK


def run_devices(request: MachineRequest, env: Environment, matrix_path: Optional[str] = None) -> ExitStatus:
    """Gather, print (the table, or JSON with ``request.json``) to ``env.stdout`` and return
    the exit status.  Codes in ``.npudoctor.toml`` are left out and said so (an entry that
    names no finding too, on stderr).  Raises
    :class:`UsageError`."""
    from npudoctor.config import load_ignore_entries, unknown_ignores

    ignores, errors = load_ignore_entries(environ=dict(env.environ))
    for note in errors + unknown_ignores(ignores):
        warn(env, note)
    data = conceal(gather(request, matrix_path, environ=env.environ, ignores=ignores))  # secrets never leave
    if request.json:
        write_json(env.stdout, data)
    else:
        from npudoctor.report.devices import render

        # piped with COLUMNS set: laid out for that width, as on a terminal that wide
        cols = env.wrap_width()
        render(data, env.stdout, terminal=cols is not None, width=cols or env.width, color=env.color())
    return status(data)


def devices_command(
    env: Environment,
    *,
    root: Optional[str] = None,
    env_file: Optional[str] = None,
    python: Optional[str] = None,
    from_: Optional[str] = None,
    user: Optional[str] = None,
    as_json: bool = False,
    no_commands: bool = False,
    matrix: Optional[str] = None,
    deadline: float = DEFAULT_DEADLINE,
) -> ExitStatus:
    """``npudoctor devices`` with its options as parsed (keyword names: the Typer command's
    parameters): build the request, run :func:`run_devices`; a :class:`UsageError` is
    written to ``env.stderr`` and ends with :attr:`ExitStatus.USAGE`."""
    try:
        request = machine_request(root, python, user, env_file, no_commands, from_, as_json, deadline)
        return run_devices(request, env, matrix)
    except UsageError as exc:
        return usage_failure(str(exc), env)


DEVICES_HELP = """Show the NPU chips, their device nodes and the device and container findings.
For each chip: health, power, temperature, AICore, memory/HBM, processes and topology (from
npu-smi); the device nodes with their permissions; the findings have codes DEV* and CTR*.  --user judges device-node access for that account,
--env-file judges the visibility variables of that file, --python the packages of that
interpreter (e.g. vllm-ascend on a 310P), --no-commands runs no npu-smi.

Exit codes: 0 no device or container errors; 1 errors found (a Critical chip, a busy or
hung npu-smi, missing or inaccessible device nodes, an invalid visible-devices
variable); 2 usage error; 3 npudoctor itself failed."""


def register(app: typer.Typer) -> None:
    @app.command(help=DEVICES_HELP)
    def devices(
        ctx: typer.Context,
        root: RootOpt = None,
        env_file: EnvFileOpt = None,
        python: PythonOpt = None,
        from_: FromOpt = None,
        user: UserOpt = None,
        as_json: JsonOpt = False,
        no_commands: NoCommandsOpt = False,
        matrix: MatrixOpt = None,
        deadline: DeadlineOpt = DEFAULT_DEADLINE,
    ) -> None:
        code = devices_command(
            environment(ctx),
            root=root,
            env_file=env_file,
            python=python,
            from_=from_,
            user=user,
            as_json=as_json,
            no_commands=no_commands,
            matrix=matrix,
            deadline=deadline,
        )
        raise typer.Exit(code)
