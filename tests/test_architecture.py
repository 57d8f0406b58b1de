"""Rules of the house that a test can hold: no import cycles among npudoctor's modules
(imports inside functions count: they close the loop at run time), and no module over
600 lines (a module that long is several things), and nothing below the command line
(:mod:`npudoctor.cli`) imports it.

Each rule has an explicit allow-list of today's exceptions, which may only shrink: an
entry that no longer applies fails the test too, so that it is deleted with the fix."""

from __future__ import annotations

import ast
import pathlib
import re
from typing import Dict, FrozenSet, List, Set

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "npudoctor"

#: Import cycles that exist today, each as the set of modules in it.
ALLOWED_CYCLES: Set[FrozenSet[str]] = set()

# A module over ~600 lines is a review signal (several concepts in one?), not a test: a
# module is split by concept, never by count (the before-stop checklist lists them).


def module_files(package_dir: pathlib.Path) -> Dict[str, pathlib.Path]:
    """``{"npudoctor.rules.cann": path}`` for every ``.py`` file under ``package_dir``
    (a package's ``__init__.py`` is the package's own name)."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported_names(module: str, path: pathlib.Path, tree: ast.AST) -> List[str]:
    """Dotted names an import statement anywhere in ``tree`` may load: ``import a.b`` →
    ``a.b``; ``from a import b`` → ``a.b`` and ``a`` (``b`` may be a module or a name);
    relative imports resolved against ``module``."""
    names: List[str] = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            names.append(origin)
            names.extend(f"{origin}.{alias.name}" for alias in node.names)
    return names


def import_graph(package_dir: pathlib.Path) -> Dict[str, Set[str]]:
    """``{module: modules of the package it imports}``, module- and function-level alike.
    An import of a name is an edge to the longest module prefix of it; a module importing
    its own parent package is no edge (Python runs the parent's ``__init__`` first anyway)."""
    files = module_files(package_dir)
    graph: Dict[str, Set[str]] = {m: set() for m in files}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in _imported_names(module, path, tree):
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                graph[module].add(name)
    return graph


def _reachable(graph: Dict[str, Set[str]], start: str) -> Set[str]:
    seen: Set[str] = set()
    todo = list(graph[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return seen


def import_cycles(graph: Dict[str, Set[str]]) -> Set[FrozenSet[str]]:
    """The strongly connected groups of two or more modules (each an import cycle)."""
    reach = {m: _reachable(graph, m) for m in graph}
    cycles: Set[FrozenSet[str]] = set()
    for m in graph:
        group = frozenset({m} | {o for o in reach[m] if m in reach[o]})
        if len(group) > 1:
            cycles.add(group)
    return cycles


def test_no_import_cycles_beyond_the_allow_list():
    cycles = import_cycles(import_graph(PACKAGE))
    new = sorted(" <-> ".join(sorted(c)) for c in cycles - ALLOWED_CYCLES)
    assert new == [], "import cycles (function-level imports count):\n" + "\n".join(new)
    gone = sorted(" <-> ".join(sorted(c)) for c in ALLOWED_CYCLES - cycles)
    assert gone == [], "these cycles are gone: delete them from ALLOWED_CYCLES:\n" + "\n".join(gone)


#: The entry points above the command line: the console entry (which reaches ``health``
#: before Typer) and ``python -m npudoctor``.  They may import :mod:`npudoctor.cli`.
ENTRY_POINTS: FrozenSet[str] = frozenset({"npudoctor.entry", "npudoctor.__main__"})


def upward_imports_of_cli(graph: Dict[str, Set[str]]) -> List[str]:
    """``"importer -> imported"`` for every module outside ``npudoctor.cli`` (and not an
    entry point) that imports ``npudoctor.cli`` or one of its modules."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module != "npudoctor.cli" and not module.startswith("npudoctor.cli.") and module not in ENTRY_POINTS
        for target in targets
        if target == "npudoctor.cli" or target.startswith("npudoctor.cli.")
    )


def test_nothing_below_the_command_line_imports_it():
    upward = upward_imports_of_cli(import_graph(PACKAGE))
    assert upward == [], (
        "modules below npudoctor.cli import it (move what they need to npudoctor.session):\n" + "\n".join(upward)
    )


def imports_of_rules_from_remedies(graph: Dict[str, Set[str]], package: str = "npudoctor") -> List[str]:
    """``"importer -> imported"`` for every module of ``<package>.remedies`` that imports
    ``<package>.rules`` or one of its modules: remedies are below the rules that use them
    (a step builder takes views and values, and judges nothing)."""
    below, above = f"{package}.remedies", f"{package}.rules"
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module == below or module.startswith(below + ".")
        for target in targets
        if target == above or target.startswith(above + ".")
    )


def test_remedies_do_not_import_rules():
    assert imports_of_rules_from_remedies(import_graph(PACKAGE)) == []


def test_the_remedies_check_sees_an_import_of_a_rule_helper(tmp_path):
    files = {
        "__init__.py": "",
        "rules/__init__.py": "",
        "rules/_devfacts.py": "NODES = ()\n",
        "remedies/__init__.py": "",
        "remedies/world.py": "from npudoctor.rules._devfacts import NODES\n",
    }
    pkg = tmp_path / "npudoctor"
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text, encoding="utf-8")
    assert imports_of_rules_from_remedies(import_graph(pkg)) == [
        "npudoctor.remedies.world -> npudoctor.rules._devfacts"
    ]


#: Modules that collect a snapshot themselves (import :func:`npudoctor.engine.collect`):
#: the one request service, and exec's environment plan, which reads the ``host`` and
#: ``cann`` sections without judging them.  May only shrink.
ALLOWED_COLLECTORS: FrozenSet[str] = frozenset({"npudoctor.session.machine", "npudoctor.runtime.environment"})


def collectors(package_dir: pathlib.Path) -> Set[str]:
    """Modules of the package (but the engine) that import ``npudoctor.engine.collect``."""
    found = set()
    for module, path in module_files(package_dir).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if module != "npudoctor.engine" and "npudoctor.engine.collect" in _imported_names(module, path, tree):
            found.add(module)
    return found


def test_one_request_service_collects_snapshots():
    assert collectors(PACKAGE) == ALLOWED_COLLECTORS


def test_the_upward_import_check_sees_a_function_level_import(tmp_path):
    files = {
        "__init__.py": "",
        "cli/__init__.py": "",
        "cli/request.py": "X = 1\n",
        "runtime/__init__.py": "",
        "runtime/quick.py": "def f():\n    from npudoctor.cli.request import X\n    return X\n",
    }
    pkg = tmp_path / "npudoctor"
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text, encoding="utf-8")
    assert upward_imports_of_cli(import_graph(pkg)) == ["npudoctor.runtime.quick -> npudoctor.cli.request"]


def _package(tmp_path: pathlib.Path, files: Dict[str, str]) -> pathlib.Path:
    pkg = tmp_path / "pkg"
    for name, text in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return pkg


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "def f():\n    from . import a\n    return a\n",
            "sub/__init__.py": "from pkg.sub.c import C\n",
            "sub/c.py": "from ..d import D\nfrom pkg.sub import helper\nC = 1\n",
            "sub/helper.py": "",
            "d.py": "def g():\n    import pkg.sub.c\n",
        },
    )
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.sub.c"] == {"pkg.d", "pkg.sub.helper"}  # its parent package is no edge
    assert graph["pkg.sub"] == {"pkg.sub.c"}
    assert import_cycles(graph) == {frozenset({"pkg.a", "pkg.b"}), frozenset({"pkg.sub.c", "pkg.d"})}


def test_the_checker_finds_no_cycle_in_a_tree():
    graph = {"p.a": {"p.b", "p.c"}, "p.b": {"p.c"}, "p.c": set()}
    assert import_cycles(graph) == set()


#: A software version written as a string ("8.0.0", "2.1.0.post10", "25.3.rc1", "3.10").
_VERSION_LITERAL = re.compile(r"^\d+\.\d+([.\-][0-9A-Za-z]+)*$")


def _version_literals(path: pathlib.Path) -> List[str]:
    """String constants of ``path`` that are versions (docstrings excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        f"{path.name}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and _VERSION_LITERAL.match(node.value)
    ]


def test_no_version_literal_in_rules():
    """Rules judge with knowledge data and the packages' own files, never with a version
    written into a rule (issue 13): version tables live in knowledge/ or matrix/."""
    found = [hit for path in sorted((PACKAGE / "rules").glob("*.py")) for hit in _version_literals(path)]
    assert found == []


#: The longest function (``def`` line to last line, decorators aside): a longer one is
#: several things, split by concept.
MAX_FUNCTION_LINES = 100


def long_functions(package_dir: pathlib.Path, limit: int = MAX_FUNCTION_LINES) -> Dict[str, int]:
    """``{"path:qualified.name": lines}`` of every function (nested ones and methods
    included) whose ``end_lineno - lineno + 1`` is over ``limit``."""
    found: Dict[str, int] = {}

    def visit(node: ast.AST, where: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > limit:
                        found[f"{where}:{name}"] = lines
                visit(child, where, name + ".")
            else:
                visit(child, where, prefix)

    for path in sorted(package_dir.rglob("*.py")):
        visit(
            ast.parse(path.read_text(encoding="utf-8"), filename=str(path)),
            path.relative_to(package_dir).as_posix(),
            "",
        )
    return found


def test_no_function_over_100_lines():
    found = sorted(f"{name} ({lines} lines)" for name, lines in long_functions(PACKAGE).items())
    assert found == [], f"functions over {MAX_FUNCTION_LINES} lines: split them by concept:\n" + "\n".join(found)


def test_the_length_check_counts_every_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(98))
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "at_limit.py": "def f():\n" + body + "    return 0\n",  # 100 lines
            "sub/over.py": "class C:\n    async def m(self):\n        def inner():\n"
            + "".join("    " * 3 + f"y{i} = {i}\n" for i in range(99))
            + "            return 0\n"
            + "        return inner\n",
        },
    )
    assert long_functions(pkg) == {"sub/over.py:C.m.inner": 101, "sub/over.py:C.m": 103}
