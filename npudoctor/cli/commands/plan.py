"""``npudoctor plan`` (resolve + bundle) and ``npudoctor plan verify``."""

import json
import os
import shlex
from typing import Any, Dict, List, Optional, Tuple

import typer

from npudoctor.cli.commands._common import (
    Annotated,
    JsonOpt,
    MatrixOpt,
    echo,
    environment,
    fail_usage,
    load_matrix_or_none,
)
from npudoctor.session.request import Environment, ExitStatus, UsageError

PLAN_HELP = """Plan an offline (intranet) install for the machine of a site snapshot.

On the air-gapped machine: `npudoctor collect -o site.json`.  Here, on a connected
machine: `npudoctor plan --for site.json [target] --output DIR` resolves one consistent set
(torch_npu, torch, Python, CANN, numpy and CANN's Python dependencies, the driver it needs)
with the compatibility matrix, explains every choice, resolves the wheels for the SITE's
interpreter (environment markers evaluated for its Python and architecture, torch from the
PyTorch CPU index where PyPI's is a CUDA build, never an nvidia-*/cuda-*/CUDA triton wheel),
lists them with sizes and the total, and downloads them into DIR, with the
CANN/driver/firmware package names, manifest.json, a hash-pinned requirements.txt,
install.sh and INSTALL.md.  --dry-run resolves and lists the wheels, downloads nothing;
without --output nor --dry-run only the plan is printed (no index is asked).

Target: any of --torch-npu X (that exact build), --torch X (any build of that torch line),
--cann X, --python X.Y; none = the site's own torch line (and its official CANN pairing) when a
build of it fits, else the newest set the site's chip and driver support, saying why;
--newest asks for the newest set.  Official pairings are preferred over declared
compatibility.  A driver upgrade is refused unless --allow-driver-upgrade.

Exit codes: 0 a plan was made (and the bundle written, complete); 1 no set fits (with the
reasons and the nearest sets), the wheels could not be fetched, or the bundle cannot install
(a CANN/driver .run package it needs is missing: each is named); 2 usage error."""

VERIFY_HELP = """Verify a bundle on the intranet machine: complete, unaltered and fit for the site.
Checked: every file present and inside DIR (no
absolute path, '..' or symlink out), sha256 matching the manifest, SHA256SUMS agreeing with
it, every pinned wheel there, every .run package the plan needs (CANN toolkit, kernels/ops,
NNAL, driver, firmware) there — else named with where to get it — files the manifest does
not list reported, and (with --for site.json) every wheel fits the site's Python,
architecture and glibc.

Exit codes: 0 the bundle is complete and fits; 1 problems found (each file named), or the
manifest is unreadable, wrong-typed or nested too deeply (with the reason); 2 usage error."""


def _load_site(path: str, matrix: Any, env: Environment) -> Any:
    from npudoctor.plan.site import site_from_snapshot
    from npudoctor.snapshot import Snapshot, SnapshotError

    try:
        snap = Snapshot.load(path)
    except SnapshotError as exc:
        raise fail_usage(str(exc), env) from None
    return site_from_snapshot(snap, source=path, matrix=matrix)


def _say(out: Any, text: str, width: Optional[int], lead: str = "", indent: int = 0) -> None:
    """``lead`` + ``text`` wrapped to ``width`` columns (words never split; the rows after the
    first indented by ``indent``); not wrapped when ``width`` is ``None`` (piped, no COLUMNS).
    A leading newline stays a blank line before it."""
    from npudoctor.report.wrapping import wrap

    blank = text.startswith("\n")
    if blank:
        echo(out, "")
    text = text.lstrip("\n")
    rows = [text] if width is None else wrap(text, width, first=len(lead), indent=indent)
    for n, row in enumerate(rows):
        echo(out, lead + row if n == 0 else row)


def _print_resolution(res: Any, out: Any, width: Optional[int] = None) -> None:
    """The site, the request and the plan (or why none fits) with its reasons, wrapped to
    ``width`` columns."""
    site = res.site
    chip = site.chip
    arch = site.arch or "?"
    if site.arch and site.arch_source and site.arch_source != "host.arch":
        arch += f" (from {site.arch_source.split(' ')[0]})"
    _say(
        out,
        f"site: {site.node or 'unknown node'} — {arch}, glibc {site.glibc or '?'}, "
        f"Python {site.python_full or site.python or '?'}, CANN {site.cann or 'none'}, "
        f"driver {site.driver or '?'}, chip {chip.name + ' x' + str(chip.count) if chip else '?'}",
        width,
        indent=4,
    )
    _say(out, f"asked: {res.request.describe()}", width, indent=4)
    if res.plan is None:
        echo(out, "\nno install set fits:")
        for r in res.reasons:
            _say(out, str(r), width, "  - ", 4)
        if res.alternatives:
            echo(out, "\nnearest sets that fit:")
            for a in res.alternatives:
                _say(out, str(a), width, "  - ", 4)
        else:
            echo(out, "\nno nearby set fits this site either")
        return
    p = res.plan
    _say(
        out,
        f"\nplan: torch_npu {p.torch_npu} + {p.torch_requirement} on CPython {p.python} ({p.arch}), CANN {p.cann}",
        width,
        indent=4,
    )
    echo(out, "\nwhy:")
    for r in p.reasons:
        _say(out, str(r), width, "  - ", 4)
    if p.warnings:
        echo(out, "\nwarnings:")
        for w in p.warnings:
            _say(out, str(w), width, "  - ", 4)
    _say(out, "\npip requirements: " + " ".join(p.requirements), width, indent=4)
    if p.packages:
        echo(out, "\nCANN / driver packages:")
        for pkg in p.packages:
            echo(out, f"  - {pkg.kind:8} {pkg.filename}")
            if pkg.url:
                echo(out, f"             {pkg.url}")


def _print_wheels(wheels: Any, plan: Any, out: Any, width: Optional[int] = None) -> None:
    """The resolved wheels with their sizes and the total (before anything is downloaded):
    one row each; below ``width`` columns a row that does not fit is stacked, its file name
    on the next line (a file name is never cut)."""
    from npudoctor.plan.closure import human_size

    unknown = sum(1 for w in wheels if w.size is None)
    total = human_size(sum(w.size or 0 for w in wheels))
    more = f", {unknown} of unknown size" if unknown else ""
    _say(out, f"\nwheels for CPython {plan.python} on {plan.arch} ({len(wheels)}, {total} in total{more}):", width)
    name_width = max((len(f"{w.name} {w.version}") for w in wheels), default=0)
    for w in wheels:
        head = f"  {f'{w.name} {w.version}':{name_width}}  {human_size(w.size):>9}"
        if width is not None and len(head) + 2 + len(w.filename) > width:
            echo(out, head.rstrip())
            echo(out, f"      {w.filename}")
        else:
            echo(out, f"{head}  {w.filename}")


def register(app: typer.Typer) -> None:
    plan_app = typer.Typer(
        name="plan",
        help=PLAN_HELP,
        invoke_without_command=True,
        no_args_is_help=False,
        subcommand_metavar="[verify ARGS...]",  # planning itself takes no subcommand
        add_completion=False,
        rich_markup_mode=None,
    )
    _add_plan(plan_app)
    _add_verify(plan_app)
    app.add_typer(plan_app, name="plan")


def _add_plan(plan_app: typer.Typer) -> None:
    """``npudoctor plan`` itself: the callback of the ``plan`` group, its options declared together."""

    @plan_app.callback(invoke_without_command=True, help=PLAN_HELP)
    def plan(
        ctx: typer.Context,
        for_: Annotated[
            Optional[str], typer.Option("--for", metavar="SITE.JSON", help="Snapshot written by `npudoctor collect`.")
        ] = None,
        torch_npu: Annotated[Optional[str], typer.Option("--torch-npu", metavar="X", help="That exact build.")] = None,
        torch: Annotated[Optional[str], typer.Option("--torch", metavar="X", help="Any build for this torch.")] = None,
        cann: Annotated[Optional[str], typer.Option("--cann", metavar="X", help="This CANN version.")] = None,
        python: Annotated[Optional[str], typer.Option("--python", metavar="X.Y", help="Target CPython.")] = None,
        allow_driver_upgrade: Annotated[
            bool, typer.Option("--allow-driver-upgrade", help="Accept a set that needs a newer NPU driver.")
        ] = False,
        newest: Annotated[
            bool,
            typer.Option("--newest", help="With no target: the newest set, not the site's own torch line."),
        ] = False,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Print the plan and the wheels with sizes; download nothing.")
        ] = False,
        output: Annotated[
            Optional[str], typer.Option("--output", "-o", metavar="DIR", help="Write the bundle here.")
        ] = None,
        index_url: Annotated[
            Optional[str], typer.Option("--index-url", metavar="URL", help="pip --index-url (default: pip's).")
        ] = None,
        extra_index_url: Annotated[
            Optional[List[str]],
            typer.Option("--extra-index-url", metavar="URL", help="pip --extra-index-url (repeatable)."),
        ] = None,
        find_links: Annotated[
            Optional[List[str]], typer.Option("--find-links", metavar="DIR|URL", help="pip --find-links (repeatable).")
        ] = None,
        torch_index_url: Annotated[
            Optional[str],
            typer.Option(
                "--torch-index-url",
                metavar="URL",
                help="Where x86_64 torch X+cpu builds come from (default https://download.pytorch.org/whl/cpu).",
            ),
        ] = None,
        cann_dir: Annotated[
            Optional[str],
            typer.Option("--cann-dir", metavar="DIR", help="Already-downloaded .run packages to copy in and check."),
        ] = None,
        fetch_cann: Annotated[
            bool, typer.Option("--fetch-cann", help="Download the .run packages from Ascend's download host.")
        ] = False,
        pypi_json: Annotated[
            Optional[str],
            typer.Option(
                "--pypi-json",
                metavar="FILE",
                help="PyPI JSON of torch-npu (pypi.org/pypi/torch-npu/json) deciding which wheels exist "
                "(default: the listing recorded in the matrix).",
            ),
        ] = None,
        matrix: MatrixOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        if ctx.invoked_subcommand is not None:
            return
        code = run_plan(
            environment(ctx),
            site_path=for_,
            torch_npu=torch_npu,
            torch=torch,
            cann=cann,
            python=python,
            allow_driver_upgrade=allow_driver_upgrade,
            newest=newest,
            dry_run=dry_run,
            output=output,
            index_url=index_url,
            extra_index_urls=list(extra_index_url or []),
            find_links=list(find_links or []),
            torch_index_url=torch_index_url,
            cann_dir=cann_dir,
            fetch_cann=fetch_cann,
            pypi_json=pypi_json,
            matrix_path=matrix,
            as_json=as_json,
        )
        raise typer.Exit(code)


def _add_verify(plan_app: typer.Typer) -> None:
    """``npudoctor plan verify``."""

    @plan_app.command("verify", help=VERIFY_HELP)
    def verify(
        ctx: typer.Context,
        directory: Annotated[str, typer.Argument(metavar="DIR", help="The bundle directory.")],
        for_: Annotated[
            Optional[str], typer.Option("--for", metavar="SITE.JSON", help="Check the wheels fit this site.")
        ] = None,
        as_json: JsonOpt = False,
    ) -> None:
        raise typer.Exit(run_verify(environment(ctx), directory, for_, as_json))


def run_verify(env: Environment, directory: str, site_path: Optional[str], as_json: bool) -> ExitStatus:
    """Verify the bundle in ``directory`` (and that it fits the site of ``site_path``)."""
    from npudoctor.plan.verify import verify_bundle

    out = env.stdout
    if not os.path.isdir(directory):
        raise fail_usage(f"{directory}: not a directory", env)
    site = _load_site(site_path, None, env) if site_path else None
    report = verify_bundle(directory, site)
    if as_json:
        echo(out, json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        echo(out, f"bundle {directory}: {report.checked} files checked")
        for p in report.problems:
            echo(out, f"  {p.severity.upper():7} {p.kind:12} {p.message}")
        echo(out, "OK: complete, intact" + (" and fits the site" if site else "") if report.ok else "FAILED")
    return ExitStatus.OK if report.ok else ExitStatus.PROBLEMS


def run_plan(
    env: Environment,
    *,
    site_path: Optional[str],
    torch_npu: Optional[str] = None,
    torch: Optional[str] = None,
    cann: Optional[str] = None,
    python: Optional[str] = None,
    allow_driver_upgrade: bool = False,
    newest: bool = False,
    dry_run: bool = False,
    output: Optional[str] = None,
    index_url: Optional[str] = None,
    extra_index_urls: Optional[List[str]] = None,
    find_links: Optional[List[str]] = None,
    torch_index_url: Optional[str] = None,
    cann_dir: Optional[str] = None,
    fetch_cann: bool = False,
    pypi_json: Optional[str] = None,
    matrix_path: Optional[str] = None,
    as_json: bool = False,
) -> ExitStatus:
    """Resolve (and unless ``dry_run`` or no ``output``, bundle), writing to ``env``.
    Returns OK (a plan was made, and the bundle written) or PROBLEMS (no set fits, or the
    bundle could not be made); raises ``typer.Exit`` with USAGE for usage errors."""
    from npudoctor.plan.resolve import PlanError, Request, resolve
    from npudoctor.plan.transfer import phase

    out = env.stdout
    if not site_path:
        raise fail_usage("give the site snapshot: npudoctor plan --for site.json (made with `npudoctor collect`)", env)
    if cann_dir and not os.path.isdir(cann_dir):
        raise fail_usage(f"--cann-dir {cann_dir}: not a directory", env)
    # --dry-run and --output go on to ask pip: their progress starts now, on a terminal
    progress = bool(dry_run or output) and env.stderr_isatty and not as_json
    with phase(progress, "planning: reading the compatibility matrix and the site snapshot"):
        matrix, site, catalog = _load_inputs(env, site_path, matrix_path, pypi_json)
    request = Request(torch_npu, torch, cann, python, allow_driver_upgrade, newest=newest)
    with phase(progress, "planning: judging torch_npu builds against the site"):
        try:
            res = resolve(site, request, matrix, catalog)
        except PlanError as exc:
            raise fail_usage(str(exc), env) from None
    doc: Dict[str, Any] = res.to_dict()
    doc["matrix"] = dict(matrix.provenance)
    if not as_json:
        _print_resolution(res, env.stdout, env.wrap_width())
    if res.plan is None:
        if as_json:
            _echo_json(out, doc)
        return ExitStatus.PROBLEMS
    if not output and not dry_run:
        if as_json:
            _echo_json(out, doc)
        else:
            _say(
                out, "\n(no --output DIR: nothing resolved or downloaded; --dry-run lists the wheels)", env.wrap_width()
            )
        return ExitStatus.OK
    from npudoctor.plan.bundle import BundleOptions

    opts = BundleOptions(
        output=output or "",
        index_url=index_url,
        extra_index_urls=list(extra_index_urls or []),
        find_links=list(find_links or []),
        torch_index_url=torch_index_url,
        cann_dir=cann_dir,
        fetch_cann=fetch_cann,
        progress=progress,
        site_file=site_path,
        env=dict(env.environ),  # pip runs in npudoctor's own (injected) environment
    )
    return _bundle(env, res.plan, site, opts, doc, dry_run=dry_run, as_json=as_json)


def _echo_json(out: Any, doc: Dict[str, Any]) -> None:
    echo(out, json.dumps(doc, indent=2, ensure_ascii=False))


def _load_inputs(
    env: Environment, site_path: str, matrix_path: Optional[str], pypi_json: Optional[str]
) -> Tuple[Any, Any, Any]:
    """The matrix, the site of the snapshot and the wheel catalogue (None: the matrix's
    listing); an input that cannot be read is a usage error."""
    from npudoctor.plan.wheels import WheelCatalog

    try:
        matrix, error = load_matrix_or_none(matrix_path)
    except UsageError as exc:
        raise fail_usage(str(exc), env) from None
    if matrix is None:
        raise fail_usage(f"the compatibility matrix cannot be loaded: {error}", env)
    site = _load_site(site_path, matrix, env)
    catalog = None
    if pypi_json:
        try:
            catalog = WheelCatalog.from_pypi_json(pypi_json)
        except ValueError as exc:
            raise fail_usage(str(exc), env) from None
    return matrix, site, catalog


def _bundle(
    env: Environment, plan: Any, site: Any, opts: Any, doc: Dict[str, Any], *, dry_run: bool, as_json: bool
) -> ExitStatus:
    """Resolve the wheels of ``plan`` and list them; unless ``dry_run``, write the bundle."""
    from npudoctor.plan.bundle import BundleError, make_bundle, resolve_plan_wheels

    out = env.stdout

    def log(msg: str) -> None:
        echo(env.stderr, f"npudoctor: {msg}")

    def failed(exc: BundleError) -> ExitStatus:
        echo(env.stderr, f"npudoctor: {exc}")
        for line in exc.details:
            echo(env.stderr, f"  {line}")
        if as_json:
            doc["bundle"] = {"error": str(exc), "details": exc.details}
            _echo_json(out, doc)
        return ExitStatus.PROBLEMS

    try:
        wheels = resolve_plan_wheels(plan, site, opts)
    except BundleError as exc:
        return failed(exc)
    doc["wheels"] = [w.to_dict() for w in wheels]
    doc["wheels_total_bytes"] = sum(w.size or 0 for w in wheels)
    if not as_json:
        _print_wheels(wheels, plan, out, env.wrap_width())
    if dry_run:
        if as_json:
            _echo_json(out, doc)
        else:
            echo(out, "\n(--dry-run: nothing downloaded)")
        return ExitStatus.OK
    try:
        result = make_bundle(plan, site, opts, log=log, wheels=wheels)
    except BundleError as exc:
        return failed(exc)
    except OSError as exc:
        raise fail_usage(f"cannot write the bundle to {opts.output}: {exc.strerror or exc}", env) from None
    return _report_bundle(env, result, doc, as_json, plan, site)


def _report_bundle(
    env: Environment, result: Any, doc: Dict[str, Any], as_json: bool, plan: Any, site: Any
) -> ExitStatus:
    """Say what the written bundle holds, the packages it misses, and the next step."""
    out = env.stdout
    doc["bundle"] = {
        "output": result.output,
        "manifest": result.manifest,
        "downloaded": result.downloaded,
        "kept": result.kept,
        "pending": result.pending,
        "files": len(result.files),
    }
    doc["bundle"]["installable"] = not result.pending
    if as_json:
        _echo_json(out, doc)
    else:
        echo(
            out,
            f"\nbundle written to {result.output}: {len(result.files)} files "
            f"({len(result.downloaded)} downloaded, {len(result.kept)} kept from a previous run)",
        )
        for p in result.pending:
            echo(out, f"  missing: {p['filename']} ({p['kind']}) {p.get('url') or ''} — {p.get('reason')}")
    if result.pending:
        names = ", ".join(str(p["filename"]) for p in result.pending)
        how = "download them and re-run with --cann-dir DIR (or --fetch-cann)"
        if any("<chip>" in str(p["filename"]) for p in result.pending):
            how = (
                "the site's NPU chip is unknown (the snapshot names none): collect the snapshot again where "
                "npu-smi works, or put the package of its chip into --cann-dir DIR; " + how
            )
        echo(
            env.stderr,
            f"npudoctor: the bundle cannot install: {len(result.pending)} package(s) missing ({names}); {how}",
        )
        return ExitStatus.PROBLEMS
    if not as_json:
        where = shlex.quote(result.output)
        if site.python and plan.python != site.python:
            # site.json says the site's own Python: verify --for it refuses the bundle, and
            # install.sh needs the interpreter the wheels are for
            from npudoctor.plan.bundle_text import site_python

            python = shlex.quote(site_python(plan, site))
            echo(
                out,
                f"next: the wheels are for CPython {plan.python}, the site's interpreter is {site.python}: "
                f"install CPython {plan.python} there first (as {python} on PATH); then copy {result.output} "
                "to the site and, from that directory:",
            )
            echo(out, f"$ cd {where} && npudoctor plan verify . && sudo bash install.sh --python {python}")
        else:
            echo(out, f"next: copy {result.output} to the site; there, from that directory:")
            echo(out, f"$ cd {where} && npudoctor plan verify . --for site.json && sudo bash install.sh")
    return ExitStatus.OK
