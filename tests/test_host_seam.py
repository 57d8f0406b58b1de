"""The Host is the only door to the judged machine (issue 20).

An AST audit of every module of ``npudoctor/``: a call that opens or lists a path --
``open()``, ``io.open``, ``os.open``, ``os.fdopen``, ``os.listdir``, ``os.scandir``,
``os.walk``, ``glob.glob``, ``Path.open/read_text/read_bytes/iterdir/glob/rglob`` -- outside
``host.py``/``hostproc.py`` fails this test unless it is listed in ``ALLOWED`` with the reason
it does not read the judged machine (npudoctor's own package data, its own process, a file it
writes itself) or only lists a directory the user named while the reads go through
``host.open_regular``/``read_capped``.  A listed call that disappears fails too, so the list
stays true."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import Dict, List, Tuple

PKG = Path(__file__).resolve().parent.parent / "npudoctor"
SEAM = {"npudoctor/host.py", "npudoctor/hostio.py", "npudoctor/hostproc.py"}
FUNCTIONS = {"open"}
MODULE_CALLS = {
    ("os", "open"),
    ("os", "fdopen"),
    ("os", "listdir"),
    ("os", "scandir"),
    ("os", "walk"),
    ("io", "open"),
    ("glob", "glob"),
    ("glob", "iglob"),
}
METHODS = {"open", "read_text", "read_bytes", "iterdir", "glob", "rglob"}

#: (module, call) → (how many, why it is not a read of the judged machine).
ALLOWED: Dict[Tuple[str, str], Tuple[int, str]] = {
    ("npudoctor/engine.py", "os.listdir"): (1, "npudoctor's own probes/ and rules/ package directories"),
    ("npudoctor/cli/app.py", "os.listdir"): (1, "npudoctor's own cli/commands package directory"),
    ("npudoctor/tomlread.py", "open"): (2, "load_bundled: npudoctor's own TOML data files and their compiled twins"),
    ("npudoctor/knowledge/codes.py", "os.listdir"): (1, "npudoctor's own data/codes directory"),
    ("npudoctor/knowledge/matrix/load.py", "os.listdir"): (
        1,
        "a matrix directory (--matrix, matrix verify): listed only, each file read by read_capped",
    ),
    ("npudoctor/probes/python.py", "open"): (1, "npudoctor's own pyprobe_script.py (package source)"),
    ("npudoctor/runtime/deadline.py", "open"): (
        2,
        "/proc/self/task/*/children and /proc/self/stat (its start time) of npudoctor's own process",
    ),
    ("npudoctor/runtime/deadline.py", "os.listdir"): (1, "/proc/self/task of npudoctor's own process"),
    ("npudoctor/snapshot.py", "os.fdopen"): (
        2,
        "atomic_write: the temporary file npudoctor creates itself, or the FIFO/device the user named as output",
    ),
    ("npudoctor/snapshot.py", "os.open"): (1, "atomic_write: a FIFO or device the user named as output, written"),
    ("npudoctor/knowledge/error_codes.py", "os.listdir"): (1, "npudoctor's own bundled error-code tables"),
    ("npudoctor/knowledge/matrix_stamp.py", "os.listdir"): (1, "npudoctor's own bundled matrix directory"),
    ("npudoctor/knowledge/matrix_stamp.py", "open"): (
        2,
        "the bundled matrix files' [meta] dates and the head of npudoctor's own refreshed copy (--version)",
    ),
    ("npudoctor/snapshot.py", "os.listdir"): (1, "clean_stale_temp: npudoctor's own temp files in its output dir"),
    ("npudoctor/parsers/elf.py", "SymbolIndex.open"): (1, "npudoctor's own classmethod (opens via open_regular)"),
    ("npudoctor/cluster/inputs.py", "os.listdir"): (1, "a directory given to compare: listed, files read capped"),
    ("npudoctor/lint/run.py", "os.walk"): (1, "a source tree given to lint: listed, files read capped"),
    ("npudoctor/lint/fix.py", "os.fdopen"): (1, "lint --fix: the temporary file npudoctor creates itself"),
    ("npudoctor/triage/scan.py", "os.walk"): (1, "a log directory given to triage: listed, files read capped"),
    # plan/ belongs to `plan verify`'s owner (bundles npudoctor builds, wheels it downloads):
    ("npudoctor/plan/bundle.py", "os.listdir"): (
        3,
        "the bundle's wheels directory npudoctor writes, and the --cann-dir of packages given on this planning machine",
    ),
    ("npudoctor/plan/transfer.py", "open"): (2, "a download npudoctor writes and its .part file"),
    ("npudoctor/plan/wheels.py", "open"): (1, "a wheel index npudoctor downloaded itself"),
}


def _calls(path: Path) -> List[Tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in FUNCTIONS:
            out.append((node.lineno, fn.id))
        elif isinstance(fn, ast.Attribute):
            if isinstance(fn.value, ast.Name) and (fn.value.id, fn.attr) in MODULE_CALLS:
                out.append((node.lineno, f"{fn.value.id}.{fn.attr}"))
            elif fn.attr in METHODS:
                receiver = ast.unparse(fn.value)
                if not receiver.endswith("host"):  # host.read_text, ctx.host.glob, self.host.open
                    out.append((node.lineno, f"{receiver}.{fn.attr}"))
    return out


def _audit() -> Tuple[Counter, List[str]]:
    seen: Counter = Counter()
    where: List[str] = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        if rel in SEAM:
            continue
        for line, call in _calls(path):
            seen[(rel, call)] += 1
            where.append(f"{rel}:{line}: {call}")
    return seen, where


def test_no_code_outside_the_host_opens_a_path() -> None:
    seen, where = _audit()
    unexpected = [
        w
        for w in where
        if (w.split(":")[0], w.split(": ", 1)[1]) not in ALLOWED
        or seen[(w.split(":")[0], w.split(": ", 1)[1])] > ALLOWED[(w.split(":")[0], w.split(": ", 1)[1])][0]
    ]
    assert not unexpected, (
        "read the judged machine through npudoctor.host (open_regular/read_capped/Host):\n" + "\n".join(unexpected)
    )


def test_the_allow_list_is_true() -> None:
    seen, _where = _audit()
    stale = [f"{mod}: {call} x{count}" for (mod, call), (count, _why) in ALLOWED.items() if seen[(mod, call)] != count]
    assert not stale, "ALLOWED names calls that are gone or fewer: " + ", ".join(stale)


def test_the_audit_sees_what_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os, io, glob\n"
        "from pathlib import Path\n"
        "open('/etc/hccn.conf')\n"
        "os.listdir('/usr/local/Ascend')\n"
        "os.walk('/x')\n"
        "Path('/etc/os-release').read_text()\n"
        "p.iterdir()\n"
        "host.read_text('/etc/hccn.conf')\n"
        "ctx.host.glob('/x')\n"
    )
    assert [c for _l, c in _calls(sample)] == [
        "open",
        "os.listdir",
        "os.walk",
        "Path('/etc/os-release').read_text",
        "p.iterdir",
    ]


def test_host_walk_gives_paths_of_the_judged_machine(tmp_path: Path) -> None:
    from npudoctor.host import Host

    pkg = tmp_path / "usr/lib/python3/site-packages/torch_npu/lib"
    pkg.mkdir(parents=True)
    (pkg / "libtorch_npu.so").write_bytes(b"\x7fELF")
    (tmp_path / "usr/lib/python3/site-packages/torch_npu/loop").symlink_to("/usr")  # not followed
    walked = list(Host(root=str(tmp_path)).walk("/usr/lib/python3/site-packages/torch_npu"))
    assert walked == [
        ("/usr/lib/python3/site-packages/torch_npu", ["lib", "loop"], []),
        ("/usr/lib/python3/site-packages/torch_npu/lib", [], ["libtorch_npu.so"]),
    ]
    assert list(Host(root=str(tmp_path)).walk("/nowhere")) == []


def test_host_walk_lists_what_os_walk_lists(tmp_path: Path) -> None:
    """The walk's one-pass listing and its relative paths: the same directories, in the same
    (top-down, sorted) order, the same names as ``os.walk`` without following links, for a
    judged root and for the live machine (``/``, where every path is its own)."""
    import os

    from npudoctor.host import Host

    top = tmp_path / "usr/lib/site-packages/torch"
    for rel in ("lib", "lib/sub/deeper", "_C", "a b", "tests/x"):
        (top / rel).mkdir(parents=True, exist_ok=True)
    for rel in ("lib/libtorch.so", "lib/sub/deeper/libx.so.1", "_C/mod.so", "a b/f", "tests/x/t.so", "__init__.py"):
        (top / rel).write_bytes(b"x")
    (top / "link-dir").symlink_to(top / "lib")  # a directory, not descended into
    (top / "link-file").symlink_to(top / "__init__.py")
    (top / "dangling").symlink_to(top / "nowhere")

    def expected(real_top: Path, shown: str) -> list:
        out = []
        for dirpath, dirnames, filenames in os.walk(real_top):
            dirnames.sort()
            rel = os.path.relpath(dirpath, real_top)
            out.append((shown if rel == "." else f"{shown}/{rel}", dirnames[:], sorted(filenames)))
        return out

    judged = list(Host(root=str(tmp_path)).walk("/usr/lib/site-packages/torch"))
    assert judged == expected(top, "/usr/lib/site-packages/torch")
    assert (
        "/usr/lib/site-packages/torch",
        ["_C", "a b", "lib", "link-dir", "tests"],
        ["__init__.py", "dangling", "link-file"],
    ) in judged
    live = list(Host(root="/").walk(str(top)))
    assert live == expected(top, str(top))
    assert list(Host(root=str(tmp_path)).walk("/usr/lib/site-packages/torch/")) == judged
