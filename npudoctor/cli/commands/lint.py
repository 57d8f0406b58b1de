"""``npudoctor lint PATH...``: the CUDA-isms in the user's code and launch scripts, with the
NPU fix (:mod:`npudoctor.lint`)."""

import os
from typing import TYPE_CHECKING, List, Optional

import typer

from npudoctor.cli.commands._common import (
    Annotated,
    FromOpt,
    JsonOpt,
    PythonOpt,
    RootOpt,
    environment,
    fail_usage,
    judge,
    machine_request,
)
from npudoctor.session.request import Environment, ExitStatus, UsageError

if TYPE_CHECKING:
    from npudoctor.lint.machine import MachineAdvice

LINT_HELP = """Find the CUDA-isms that break or silently degrade on an Ascend NPU in code and launch files.
It reads Python files, notebooks (.ipynb code cells), shell launch scripts (.sh, .bash, or a
shell or Python shebang without a suffix), launcher and Kubernetes configs (.yaml, .yml, .json),
Dockerfiles (Dockerfile, Containerfile, *.dockerfile) and requirements files (requirements*.txt,
constraints*.txt) and finds .cuda() and "cuda:N",
torch.cuda.* calls, backend "nccl", torch.cuda.amp, torch.load without map_location, cuDNN
flags, CUDA graphs, float64 tensors, CUDA-only libraries, CPU fallback behind torch.cuda.is_available(),
CUDA_VISIBLE_DEVICES / NCCL_* / nvidia-smi in launch scripts, CUDA-only packages and the
PyTorch CUDA wheel index in requirements and pip install lines, CUDA base images, and
nvidia.com/gpu resource requests. Each finding carries the NPU fix;
`npudoctor explain LNTnnn` says more. Directories are walked without following links, skipping
.git, virtual environments and node_modules.

With --root DIR, --python PATH or --from SNAPSHOT the advice follows that machine: the mixed
precision API of its installed torch_npu (only the Python packages are read; nothing is run
inside --root). Without them the advice follows --torch-npu X.Y, or states its assumption; with
them --torch-npu names the line only when that machine has no torch_npu lint can read.

A file that cannot be read, decoded or parsed is not linted: it is one LNT016 warning,
counted in the summary ("N not linted"), so --strict fails on it. Python files are decoded
as Python decodes them (a coding declaration such as "# -*- coding: gbk -*-", else UTF-8).

Exit codes: 0 no error found; 1 errors (or warnings with --strict); 2 usage error."""

FORMATS = ("text", "json", "sarif", "github")


def machine_advice(
    root: Optional[str], python: Optional[str], from_: Optional[str], env: Environment
) -> "MachineAdvice":
    """Read the Python packages and devices of the machine and judge them with the rules;
    raises :class:`UsageError`."""
    from npudoctor.context import Options
    from npudoctor.lint.machine import advice_from

    request = machine_request(root, python, None, None, False, from_, False)
    snapshot, findings = judge(request, Options(), sections=["python", "packages", "devices"], environ=env.environ)
    return advice_from(snapshot.facts, findings)


#: Seconds a run goes before a terminal gets a progress line (small trees stay quiet).
PROGRESS_AFTER = 2.0


class Progress:
    """``npudoctor lint: N linted`` written over itself on stderr when stderr is a terminal and the run
    has gone on for :data:`PROGRESS_AFTER` seconds (small trees stay quiet)."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.start = env.clock()
        self.shown = False

    def __call__(self, files: int) -> None:
        if (self.shown and files % 50) or self.env.clock() - self.start < PROGRESS_AFTER:
            return
        self.env.stderr.write("\r")  # alone: the escaping of every output keeps a lone carriage return
        self.env.stderr.write(f"npudoctor lint: {files} linted")
        self.env.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            self.env.stderr.write("\n")


def register(app: typer.Typer) -> None:
    @app.command(help=LINT_HELP)
    def lint(
        ctx: typer.Context,
        paths: Annotated[List[str], typer.Argument(metavar="PATH...", help="Files or directories to lint.")],
        as_json: JsonOpt = False,
        output_format: Annotated[
            str, typer.Option("--format", help="Output form: text, json, sarif or github (workflow annotations).")
        ] = "text",
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
        torch_npu: Annotated[
            Optional[str],
            typer.Option(
                "--torch-npu", metavar="X.Y", help="The torch_npu release line the code runs with (AMP advice)."
            ),
        ] = None,
        fix: Annotated[
            bool,
            typer.Option(
                "--fix",
                help='Apply the unambiguous rewrites (.cuda() -> .npu(), "nccl" -> "hccl", "cuda:N" -> "npu:N", '
                "and import torch_npu when they need it).",
            ),
        ] = False,
        show_diff: Annotated[
            bool,
            typer.Option(
                "--diff",
                help="Print the rewrites --fix would make as a unified diff; write nothing (exit status as without it).",
            ),
        ] = False,
        root: RootOpt = None,
        python: PythonOpt = None,
        from_: FromOpt = None,
    ) -> None:
        from npudoctor.lint.machine import release_line
        from npudoctor.lint.report import exit_status, render
        from npudoctor.lint.run import lint_paths

        env = environment(ctx)
        form = "json" if as_json else output_format
        if form not in FORMATS:
            raise fail_usage(f"--format {output_format!r}: choose one of {', '.join(FORMATS)}", env)
        if as_json and output_format not in ("text", "json"):
            raise fail_usage("--json and --format cannot be combined", env)
        if show_diff and fix:
            raise fail_usage("--diff previews the rewrites and writes nothing; --fix writes them: give one", env)
        if show_diff and form != "text":
            raise fail_usage("--diff prints a unified diff; it cannot be combined with --json or --format", env)
        missing = [p for p in paths if not os.path.lexists(p)]
        if missing:
            raise fail_usage(f"no such file or directory: {', '.join(missing)}", env)
        try:
            line = release_line(torch_npu)
            no_bf16, npus = None, None
            if root or python or from_:
                advice = machine_advice(root, python, from_, env)
                no_bf16, npus = advice.no_bf16, advice.npus
                said = advice.said
                if advice.torch_npu is not None:
                    if torch_npu:
                        raise UsageError(
                            f"--torch-npu {torch_npu}: that machine says {advice.said}; the AMP advice follows it"
                            " (leave out --torch-npu, or lint without --root/--python/--from)"
                        )
                    line = advice.torch_npu
                elif torch_npu:
                    said += f"; AMP advice for --torch-npu {torch_npu}"
                else:  # the only way to name the line in this mode
                    said += "; give --torch-npu X.Y for the AMP advice of the torch_npu it will run with"
                env.stderr.write(f"npudoctor lint: {said}\n")
        except (ValueError, UsageError) as exc:
            raise fail_usage(str(exc), env) from None
        progress = Progress(env) if env.stderr_isatty else None
        result = lint_paths(paths, torch_npu=line, progress=progress, no_bf16=no_bf16, npus=npus)
        if progress is not None:
            progress.done()
        if fix or show_diff:
            from npudoctor.lint import fix as fixer

            changes = fixer.plan(result.findings)
            if show_diff:  # a preview: the findings stand, and the exit status says so
                env.stdout.write(fixer.diff(changes))
                raise typer.Exit(int(exit_status(result, strict)))
            fixer.write(changes)
            result = lint_paths(paths, torch_npu=line, no_bf16=no_bf16, npus=npus)
        env.stdout.write(render(result, form))
        code: ExitStatus = exit_status(result, strict)
        raise typer.Exit(int(code))
