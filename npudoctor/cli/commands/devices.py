"""``npudoctor devices``: the NPU chips of this machine (health, memory, processes,
topology) as a readable table, or ``--json``; plus the device and container findings.

This module is the Typer registration only; the command's work is
:func:`npudoctor.cli.devices.devices_command` (Typer-free: :mod:`npudoctor.cli.fast` runs the
same function without Typer).
"""

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
)
from npudoctor.cli.devices import devices_command
from npudoctor.cli.request import DEFAULT_DEADLINE

DEVICES_HELP = """Show the NPU chips: health, power, temperature, AICore, memory/HBM, processes and
topology (from npu-smi), the device nodes and their permissions, and the device and
container findings (codes DEV*, CTR*).  --user judges device-node access for that account,
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
