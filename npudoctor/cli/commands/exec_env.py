"""``npudoctor exec`` (a container entrypoint) and ``npudoctor env``: options → a
:class:`~npudoctor.session.request.MachineRequest` → :func:`npudoctor.runtime.exec.run_exec` /
:func:`npudoctor.runtime.environment.plan_environment` → an
:class:`~npudoctor.session.request.ExitStatus`."""

import json
import sys
from typing import Any, List, Optional, Tuple

import typer

from npudoctor.cli.commands._common import (
    Annotated,
    EnvFileOpt,
    FromOpt,
    IgnoreOpt,
    JsonOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    UserOpt,
    environment,
    fail_usage,
)
from npudoctor.session.request import Environment, ExitStatus, MachineRequest

EXEC_HELP = """Run CMD in the CANN environment, after the quick health checks.

The environment is what the selected toolkit's (and NNAL's) set_env.sh would set,
computed by reading the scripts (nothing is sourced, no file is edited); a toolkit that
is already sourced is kept.  The checks of `npudoctor health` then run with that
environment and print one line per finding on stderr.  Finally npudoctor REPLACES
itself with CMD (exec): CMD keeps the pid, receives the signals and its exit status is
the container's.  Use it as an entrypoint: ENTRYPOINT ["npudoctor", "exec", "--"].

--env-file FILE: CMD starts from that environment (plus the CANN variables) instead of
this shell's.  --user judges that account's device access (CMD still runs as this
process).  --no-commands: the checks run no npu-smi.

Exit codes: CMD's own status once it runs; 125 refused by --strict (errors found) or
npudoctor could not prepare (bad --root, no CMD); 126 CMD found but not executable;
127 CMD not found; 2 bad npudoctor option."""

ENV_HELP = """Print the CANN environment as shell lines, for `eval "$(npudoctor env)"`.

The lines are `export NAME='value'` (values quoted for POSIX shells) for every variable
that the selected toolkit's (and NNAL's) set_env.sh would set or change -- the same
environment `npudoctor exec` runs commands in; nothing when it is already sourced.
--json prints the plan (toolkit, script, variables set, lines not understood).
--from FILE plans from a snapshot written by `npudoctor collect` (the set_env.sh
evaluation it recorded); --env-file FILE starts from that environment instead of this
shell's; --user computes the login environment of that account.

--recommend prints instead the lines that fix every runtime-tunable finding of `check`
(ENV008-ENV011: a setting torch_npu rejects, misreads or ignores, a debugging switch left
on, a CUDA/NCCL variable nothing reads), as shell lines, or with --format dockerfile / pod
as Dockerfile ENV lines or a pod-spec fragment.

Exit codes: 0 printed; 1 no CANN toolkit found (nothing printed); 2 usage error
(e.g. --root is not a directory)."""


def register(app: typer.Typer) -> None:
    @app.command(
        "exec",
        help=EXEC_HELP,
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": False},
    )
    def exec_(
        command: Annotated[
            Optional[List[str]],
            typer.Argument(metavar="CMD", help="The command to run and its arguments (after --).", show_default=False),
        ] = None,
        root: RootOpt = None,
        python: PythonOpt = None,
        user: UserOpt = None,
        env_file: EnvFileOpt = None,
        no_commands: NoCommandsOpt = False,
        strict: Annotated[bool, typer.Option("--strict", help="Refuse to start CMD on errors (exit 125).")] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only errors.")] = False,
        timeout: Annotated[
            float, typer.Option("--timeout", metavar="SECONDS", help="Budget of the checks before CMD starts.")
        ] = 5.0,
        ignore: IgnoreOpt = None,
    ) -> None:
        from npudoctor.runtime.exec import ExecRequest, run_exec

        if not timeout > 0:  # a bad npudoctor option, as the help says: 2, like --timeout abc
            raise fail_usage(f"exec: --timeout {timeout:g}: give a positive number of seconds")
        machine = MachineRequest(root=root, python=python, user=user, env_file=env_file, no_commands=no_commands)
        request = ExecRequest(
            command=tuple(command or ()),
            machine=machine,
            strict=strict,
            quiet=quiet,
            timeout=timeout,
            ignore=tuple(ignore or ()),
        )
        raise typer.Exit(run_exec(request))

    @app.command("env", help=ENV_HELP)
    def env(
        ctx: typer.Context,
        root: RootOpt = None,
        python: PythonOpt = None,
        user: Annotated[
            Optional[str],
            typer.Option(
                "--user",
                metavar="NAME|UID",
                help="The environment of this account's login: its HOME (and a toolkit in ~/Ascend), USER, LOGNAME.",
            ),
        ] = None,
        env_file: EnvFileOpt = None,
        no_commands: NoCommandsOpt = False,
        from_file: FromOpt = None,
        as_json: JsonOpt = False,
        recommend: Annotated[
            bool, typer.Option("--recommend", help="Print the settings that fix the runtime-tunable findings.")
        ] = False,
        form: Annotated[
            str,
            typer.Option("--format", metavar="shell|dockerfile|pod", help="The form of --recommend's lines."),
        ] = "shell",
    ) -> None:
        from npudoctor.runtime.environment import LaunchError, export_lines, plan_environment

        if recommend:
            request = (root, python, user, env_file, no_commands, from_file)
            raise typer.Exit(_recommend(environment(ctx), request, form))
        if form != "shell":
            print("npudoctor env: --format needs --recommend", file=sys.stderr)
            raise typer.Exit(ExitStatus.USAGE)

        machine = MachineRequest(
            root=root,
            python=python,
            user=user,
            env_file=env_file,
            no_commands=no_commands,
            from_file=from_file,
            json=as_json,
        )
        try:
            # the starting environment: the --env-file's, else npudoctor's own (injected)
            plan = plan_environment(machine, machine.workload_environ(environment(ctx).environ))
        except (LaunchError, ValueError) as exc:  # ValueError: an unreadable or malformed --env-file
            print(f"npudoctor: {exc}", file=sys.stderr)
            raise typer.Exit(ExitStatus.USAGE) from None
        if machine.json:
            print(json.dumps(plan.to_dict(), indent=2, ensure_ascii=False))
        else:
            for note in plan.notes:
                print(f"# npudoctor: {note}", file=sys.stderr)
            for line in export_lines(plan):
                print(line)
        raise typer.Exit(ExitStatus.PROBLEMS if plan.method == "none" else ExitStatus.OK)


def _recommend(env: Environment, options: Tuple[Any, ...], form: str) -> ExitStatus:
    """``env --recommend``: ``options`` are the machine options as parsed (root, python,
    user, env_file, no_commands, from)."""
    from npudoctor.runtime.recommend import FORMS, recommend, render
    from npudoctor.session.machine import machine_request
    from npudoctor.session.request import UsageError

    if form not in FORMS:
        env.stderr.write(f"npudoctor env: --format {form}: use shell, dockerfile or pod\n")
        return ExitStatus.USAGE
    try:
        request = machine_request(*options)
        steps, findings = recommend(request, env.environ)
    except UsageError as exc:
        env.stderr.write(f"npudoctor: {exc}\n")
        return ExitStatus.USAGE
    for finding in findings:
        env.stderr.write(f"# npudoctor: {finding.code} {finding.title}\n")
    if not steps:
        env.stderr.write("# npudoctor: no runtime-tunable setting to change\n")
    for line in render(steps, form):
        env.stdout.write(line + "\n")
    return ExitStatus.OK
