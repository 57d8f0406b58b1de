"""``npudoctor matrix``: refresh, show, diff and verify the compatibility matrix."""

import json
from typing import Any, Dict, List, Optional, Set, Tuple

import typer

from npudoctor.cli.commands._common import Annotated, JsonOpt, MatrixOpt, echo, environment, fail_usage
from npudoctor.session.request import Environment, ExitStatus

matrix_app = typer.Typer(
    name="matrix",
    help="The torch_npu / PyTorch / CANN / Python / driver compatibility matrix: refresh it from the official "
    "tables, show rows, compare copies, verify a file.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

REFRESH_HELP = """Refresh the matrix from the official tables, release notes and PyPI.  Fetch the
official mapping table (Ascend/pytorch COMPATIBILITY.en.md), the
TorchNPU release notes (declared CANN ranges), the CANN release notes of the newest CANN
releases the matrix knows (CANN <-> Ascend HDK pairing, lists and Y/N grids) and the PyPI JSON
of torch-npu, merge them into the matrix in use (the last refresh, else the bundled matrix), so
refreshes accumulate, validate, and write the result to the user
cache (NPUDOCTOR_CACHE_DIR overrides the directory); the previous copy is kept as
matrix.json.prev.  Each default source is tried on GitHub first, then on its gitcode mirror.
--source (repeatable) replaces the default sources: an https:// URL of a mirror, or a local
file for air-gapped machines (a COMPATIBILITY.md / README.md / release notes you carried in, a
saved PyPI JSON).  Sources that fail are reported one by one ("no network to HOST"); the
others still refresh.  A refresh never drops a known row or narrows a paired or declared CANN
list: one that would is refused, listing what it would drop (--replace accepts it).  Tables
that read ambiguously (two torch_npu columns and no package column, a package that is not a
build of its PyTorch, a grid row of the wrong length, a grid cell other than Y/N/empty) are
refused, naming the table, row and cell.  When no official table answered (only PyPI, or
nothing), nothing is written and the matrix in use keeps its date.

Exit codes: 0 every source refreshed (or --dry-run ran); 1 some sources failed, the rest were
written; 2 usage error; 3 nothing written (no official table readable, result invalid, a known
row would be dropped, cache not writable) - the matrix in use is unchanged."""

SHOW_HELP = """Show the matrix rows, one torch_npu build each, with what pairs with it.  Columns:
torch_npu package, PyTorch, the officially paired CANN,
branch, table (whether the official mapping table lists the row: active, historical,
release-notes-only, unmapped, prerelease), support (the lifecycle of the PyTorch line from
SUPPORT.md: development, maintenance, "EOL since <date>", as of today or the matrix's
retrieval date, whichever is later) and the CPython versions with wheels on PyPI (per
platform).  Filters combine; --cann lists the official pairing (add --compatible for versions
the release notes declare compatible).

Exit codes: 0 rows shown; 1 no row matches; 2 usage error or the matrix cannot be loaded."""

DIFF_HELP = """Compare two matrices row by row: with no argument the refreshed cache copy
against the bundled one; with A and B, two matrix files or directories.

Exit codes: 0 no difference; 1 differences shown; 2 usage error or a matrix cannot be loaded."""

VERIFY_HELP = """Check a matrix file (.toml or .json, or a directory of them) against the schema and print
its provenance.  Without FILE: the refreshed cache copy if there is one (saying whether it is
the matrix in use), else the bundled matrix.  Every problem names the file, row and field.

Exit codes: 0 valid; 1 invalid; 2 usage error (no such file)."""


def _load(path: Optional[str], env: Environment) -> Any:
    from npudoctor.knowledge.matrix import MatrixError, load_matrix

    try:
        return load_matrix(path)
    except MatrixError as exc:
        raise fail_usage(str(exc), env) from None


def _py_text(row: Any) -> str:
    a, x = row.python.get("aarch64", []), row.python.get("x86_64", [])
    if not a and not x:
        return ("doc: " + " ".join(row.python_doc)) if row.python_doc else "-"
    if a == x:
        return " ".join(a)
    return f"aarch64: {' '.join(a) or '-'}; x86_64: {' '.join(x) or '-'}"


@matrix_app.command("show", help=SHOW_HELP)
def show(
    ctx: typer.Context,
    torch_npu: Annotated[
        Optional[str], typer.Option("--torch-npu", metavar="X", help="Exact torch_npu version.")
    ] = None,
    torch: Annotated[Optional[str], typer.Option("--torch", metavar="X", help="PyTorch version.")] = None,
    cann: Annotated[Optional[str], typer.Option("--cann", metavar="X", help="CANN version (official pairing).")] = None,
    python: Annotated[Optional[str], typer.Option("--python", metavar="X.Y", help="CPython with a wheel.")] = None,
    platform: Annotated[
        Optional[str],
        typer.Option(
            "--platform",
            metavar="ARCH",
            help="aarch64 or x86_64: builds with a wheel for it (for --python's version when given).",
        ),
    ] = None,
    compatible: Annotated[
        bool, typer.Option("--compatible", help="With --cann: also rows whose line is declared compatible.")
    ] = False,
    as_json: JsonOpt = False,
    matrix: MatrixOpt = None,
) -> None:
    env = environment(ctx)
    if platform and platform not in ("aarch64", "x86_64"):
        raise fail_usage(f"--platform {platform}: use aarch64 or x86_64", env)
    if python and not python.replace(".", "").isdecimal():
        raise fail_usage(f"--python {python}: give a version like 3.10", env)
    from npudoctor.knowledge.versions import parse_cann

    if cann and parse_cann(cann) is None:
        raise fail_usage(f"--cann {cann}: not a CANN version (give one like 8.2.RC1 or 9.1.0)", env)
    m = _load(matrix, env)
    rows = list(m.torch_npu_rows)
    if torch_npu:
        found = m.find_torch_npu(torch_npu)
        rows = [found] if found else []
    if torch:
        keep = {id(r) for r in m.rows_for_torch(torch)}
        rows = [r for r in rows if id(r) in keep]
    if cann:
        fits = ("paired", "compatible") if compatible else ("paired",)
        rows = [r for r in rows if m.cann_fit(r, cann) in fits]
    if python:
        py = ".".join(python.split(".")[:2])
        rows = [r for r in rows if py in r.pythons(platform)]
    elif platform:  # the builds with a wheel for that platform, any Python
        rows = [r for r in rows if r.python.get(platform)]
    from npudoctor.knowledge.matrix import _newest_first

    rows = _newest_first(rows)
    if as_json:
        out = {"matrix": m.provenance, "rows": [r.to_dict() for r in rows]}
        for d, r in zip(out["rows"], rows):
            d["support"] = m.support(r)
            if cann:
                d["cann_fit"] = m.cann_fit(r, cann)
        echo(env.stdout, json.dumps(out, indent=2, ensure_ascii=False))
    else:
        _print_rows(env, rows, m, cann)
    if not rows:
        given = {"--torch-npu": torch_npu, "--torch": torch, "--cann": cann, "--python": python, "--platform": platform}
        asked = " ".join(f"{k} {v}" for k, v in given.items() if v)
        hint = "; add --compatible for the rows declared compatible with it" if cann and not compatible else ""
        echo(env.stderr, f"no torch_npu build in the matrix matches {asked}{hint}")
    raise typer.Exit(ExitStatus.OK if rows else ExitStatus.PROBLEMS)


def _declared_lines(declared: List[str], known: Set[Tuple[int, int]]) -> str:
    """``8.5.X to 9.2.X`` when ``declared`` (CANN lines such as ``8.5.X``) holds every line
    the matrix knows from its first to its last, else the lines themselves."""
    from npudoctor.knowledge.versions import major_minor

    lines = [line for line in map(major_minor, declared) if line is not None]
    whole = len(declared) > 2 and len(lines) == len(declared) and lines == sorted(lines)
    if whole and sorted(k for k in known if lines[0] <= k <= lines[-1]) == lines:
        return f"{declared[0]} to {declared[-1]}"
    return ", ".join(declared)


def _print_rows(env: Environment, rows: List[Any], m: Any, cann: Optional[str]) -> None:
    header = ("torch_npu", "torch", "CANN", "branch", "table", "support", "Python (PyPI wheels)")
    table = [header]
    for r in rows:
        c = ", ".join(r.cann) or "-"
        if cann and m.cann_fit(r, cann) == "compatible":
            c += f" (compatible: {cann})"
        elif not r.cann and r.cann_compatible:  # no one paired release: the declared set
            c = "compatible: " + _declared_lines(r.cann_compatible, m.known_cann_lines())
        table.append((r.torch_npu, r.torch, c, r.branch or "-", r.status, m.support(r)["text"], _py_text(r)))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header) - 1)]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + str(row[-1]) for row in table]
    cols = env.wrap_width()
    if cols is None or max(len(line) for line in lines) <= cols:
        for line in lines:
            echo(env.stdout, line)
    else:  # narrower than the table: one block per row, its fields named, wrapped to the width
        from npudoctor.report.wrapping import wrap

        for row in table[1:]:
            fields = ", ".join(f"{name} {value}" for name, value in zip(header[1:], row[1:]))
            for line in wrap(f"torch_npu {row[0]}: {fields}", cols, indent=4):
                echo(env.stdout, line)
    prov = m.provenance
    echo(
        env.stderr,
        f"\n{len(rows)} row(s); matrix {prov.get('origin')} {prov.get('source')}, retrieved {prov.get('retrieved')}",
    )


@matrix_app.command("refresh", help=REFRESH_HELP)
def refresh_cmd(
    ctx: typer.Context,
    source: Annotated[
        Optional[List[str]], typer.Option("--source", metavar="URL|FILE", help="A source (repeatable).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Accept a refresh that drops known rows or narrows a paired/declared CANN list."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    env = environment(ctx)
    from npudoctor.knowledge.matrix import cache_dir
    from npudoctor.knowledge.refresh import refresh

    result = refresh(list(source or []) or None, dry_run=dry_run, replace=replace)
    if as_json:
        echo(
            env.stdout,
            json.dumps(
                {
                    "sources": [s.__dict__ for s in result.sources],
                    "changes": result.changes,
                    "written": result.written,
                    "previous": result.previous,
                    "dry_run": dry_run,
                    "error": result.error or None,
                    "dropped": result.dropped,
                },
                indent=2,
                ensure_ascii=False,
            ),
        )
    else:
        for s in result.sources:
            for t in s.tried:
                echo(env.stdout, f"mirror  {t} (next mirror tried)")
            if s.ok:
                echo(env.stdout, f"ok      {s.source}: {s.summary}")
                for w in s.warnings:
                    echo(env.stdout, f"        warning: {w}")
            else:
                echo(env.stdout, f"FAILED  {s.source}: {s.error}")
        if result.changes:
            echo(env.stdout, f"\n{len(result.changes)} change(s){' (dry run, nothing written)' if dry_run else ''}:")
            for c in result.changes:
                echo(env.stdout, f"  {c}")
        elif not result.error:
            echo(env.stdout, "\nno change to the matrix rows")
        if result.dropped:
            echo(env.stdout, f"\n{len(result.dropped)} entr{'y' if len(result.dropped) == 1 else 'ies'} dropped:")
            for d in result.dropped:
                echo(env.stdout, f"  - {d}")
        if result.error:
            echo(env.stderr, f"\nnpudoctor: {result.error}")
        elif result.written:
            echo(
                env.stdout,
                f"\nwritten {result.written}" + (f" (previous copy: {result.previous})" if result.previous else ""),
            )
        elif dry_run:
            echo(env.stdout, f"\n(dry run: would write {cache_dir()}/matrix.json)")
    raise typer.Exit(refresh_status(result))


def refresh_status(result: Any) -> ExitStatus:
    """The exit status of ``matrix refresh``: NOT_WRITTEN when nothing was written,
    PROBLEMS when some sources failed (the rest written), else OK."""
    if result.error:
        return ExitStatus.NOT_WRITTEN
    return ExitStatus.PROBLEMS if result.failed else ExitStatus.OK


def _rows_by_key(m: Any) -> Dict[Tuple[str, str], Dict[str, Any]]:
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    keys = {"torch_npu": "torch_npu", "cann": "version", "chip": "name", "family": "family", "torch_line": "torch"}
    for table, kf in keys.items():
        for r in m.data.get(table, []):
            k = str(r.get(kf))
            if table == "torch_npu":
                from npudoctor.knowledge.versions import pep440_public

                v = pep440_public(k)
                k = str(v) if v is not None else k
            out[(table, k)] = r
    return out


_IGNORED = {"retrieved", "source"}


def diff_matrices(a: Any, b: Any) -> List[str]:
    """Human-readable differences between two loaded matrices (rows added, removed,
    fields changed; ``retrieved``/``source`` changes are left out)."""
    ra, rb = _rows_by_key(a), _rows_by_key(b)
    lines: List[str] = []
    for key in sorted(set(ra) | set(rb)):
        table, k = key
        if key not in ra:
            lines.append(f"+ [{table}] {k}")
        elif key not in rb:
            lines.append(f"- [{table}] {k}")
        else:
            x, y = ra[key], rb[key]
            fields = sorted((set(x) | set(y)) - _IGNORED)
            changed = [f for f in fields if x.get(f) != y.get(f)]
            for f in changed:
                lines.append(f"~ [{table}] {k}: {f} {x.get(f)!r} -> {y.get(f)!r}")
    return lines


@matrix_app.command("diff", help=DIFF_HELP)
def diff(
    ctx: typer.Context,
    a: Annotated[Optional[str], typer.Argument(metavar="[A]", help="First matrix (file or directory).")] = None,
    b: Annotated[Optional[str], typer.Argument(metavar="[B]", help="Second matrix.")] = None,
    as_json: JsonOpt = False,
) -> None:
    env = environment(ctx)
    import os

    from npudoctor.knowledge.matrix import MatrixError, cache_path, load_bundled, load_from

    if (a is None) != (b is None):
        raise fail_usage("give two matrices A and B, or none (cache vs bundled)", env)
    try:
        if a is None:
            if not os.path.exists(cache_path()):
                raise fail_usage(f"no refreshed matrix in {cache_path()}; run `npudoctor matrix refresh` first", env)
            left, right = load_bundled(), load_from(cache_path(), "cache")
        else:
            left, right = load_from(a, "file"), load_from(b, "file")  # type: ignore[arg-type]
    except MatrixError as exc:
        raise fail_usage(str(exc), env) from None
    lines = diff_matrices(left, right)
    if as_json:
        echo(
            env.stdout,
            json.dumps(
                {"a": left.provenance, "b": right.provenance, "differences": lines}, indent=2, ensure_ascii=False
            ),
        )
    else:
        echo(
            env.stdout,
            f"--- {left.provenance['source']} ({left.provenance['origin']}, {left.provenance.get('retrieved')})",
        )
        echo(
            env.stdout,
            f"+++ {right.provenance['source']} ({right.provenance['origin']}, {right.provenance.get('retrieved')})",
        )
        for line in lines:
            echo(env.stdout, line)
        echo(env.stderr, f"{len(lines)} difference(s)")
    raise typer.Exit(ExitStatus.PROBLEMS if lines else ExitStatus.OK)


def _default_target() -> Tuple[str, str, str]:
    """``(path, origin, description)`` of the matrix ``verify`` checks without FILE: the
    refreshed cache copy if one exists (whether or not it is in use, and why), else the
    bundled matrix."""
    import os

    from npudoctor.knowledge.matrix import MatrixError, bundled_dir, cache_path, load_matrix

    cached = cache_path()
    if not os.path.exists(cached):
        return bundled_dir(), "bundled", f"the bundled matrix, in use (no refreshed copy at {cached})"
    try:
        in_use = load_matrix()
    except MatrixError:
        in_use = None
    prov = in_use.provenance if in_use is not None else {}
    if prov.get("origin") == "cache":
        return cached, "cache", "the refreshed cache copy, in use"
    why = "it does not load" if prov.get("cache_error") or in_use is None else "older than the bundled matrix"
    return cached, "cache", f"the refreshed cache copy, NOT in use ({why}); the bundled matrix is used"


@matrix_app.command("verify", help=VERIFY_HELP)
def verify(
    ctx: typer.Context,
    file: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[FILE]",
            help="A matrix .toml/.json file or a directory of them (default: the refreshed cache copy if "
            "present, else the bundled matrix).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    env = environment(ctx)
    import os

    from npudoctor.knowledge.matrix import MatrixError, load_from

    origin, what = "file", None
    if file is None:
        file, origin, what = _default_target()
    elif not os.path.exists(file):
        raise fail_usage(f"{file}: no such file or directory", env)
    if what and not as_json:
        echo(env.stdout, f"verifying {what}: {file}")
    try:
        m = load_from(file, origin, partial=origin == "file")
    except MatrixError as exc:
        if as_json:
            echo(
                env.stdout,
                json.dumps(
                    {"valid": False, "file": file, "origin": origin, "what": what, "error": str(exc)},
                    indent=2,
                    ensure_ascii=False,
                ),
            )
        else:
            echo(env.stdout, f"invalid: {exc}")
        raise typer.Exit(ExitStatus.PROBLEMS) from None
    counts = {t: len(m.data.get(t, [])) for t in ("torch_npu", "cann", "chip", "family", "python_dep")}
    if as_json:
        echo(
            env.stdout,
            json.dumps(
                {
                    "valid": True,
                    "file": file,
                    "origin": origin,
                    "what": what,
                    "provenance": m.provenance,
                    "rows": counts,
                },
                indent=2,
                ensure_ascii=False,
            ),
        )
    else:
        echo(env.stdout, f"valid: {file}")
        echo(env.stdout, "rows: " + ", ".join(f"{n} {t}" for t, n in counts.items()))
        echo(env.stdout, f"retrieved {m.provenance.get('retrieved')}, sha256 {m.provenance.get('sha256')}")
        for s in m.provenance.get("sources", []):
            echo(env.stdout, f"source: {s}")
    raise typer.Exit(ExitStatus.OK)


def register(app: typer.Typer) -> None:
    app.add_typer(matrix_app, name="matrix")
