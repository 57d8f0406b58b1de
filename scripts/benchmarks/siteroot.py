"""``npudoctor check --root`` on a container whose site-packages holds 1,000 and 10,000 added
files: the native-module audit stays linear (target: the 10,000-file tree takes <= 10x the
time of the 1,000-file one, cold and warm).

The tree is tests/scenarios/k03-extension-other-torch-npu (torch 2.1.0, torch_npu
2.1.0.post10 with its ELF files, a third-party extension linking ``libtorch_npu.so``, CANN
8.0.0, the driver) copied to a temporary directory, with whole distributions added to its
site-packages: each a ``*.dist-info`` (METADATA, WHEEL, INSTALLER, top_level.txt, RECORD
listing every file with its sha256 and size) and a package directory holding
``__init__.py``, ``core.py``, ``data.json``, ``sub/__init__.py`` and one extension module
-- 10 files per distribution.  The extension modules are real ELF files compiled here by
``gcc``/``g++`` (copied per package, so that each is its own file): a pure-C module, a C
module linking ``libm``, a C++ module with ``std::string`` in its interface (linking
``libstdc++``) and a C++ module calling into a ``libc10.so`` (a small library built here
with that soname, so the module is a torch extension with a readable C++ ABI).  Without
``gcc`` the benchmark says so and measures nothing.

Measured in one run, the order rotated each round: ``python -c pass``, and ``npudoctor check
--root`` of the scenario as it is (0 files added), with 1,000 and with 10,000 files added --
each *cold* (a new ``NPUDOCTOR_CACHE_DIR``: every ELF file parsed, every directory walked)
and then *warm* (the same cache directory again) -- through the console script pip writes.
Reported: medians of wall and CPU time (``wait4``: the process and the children it waited
for), the ratio 10,000 / 1,000 (the target) and, to show what the files themselves cost,
the ratio of the times above the 0-file tree's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from bench import median

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "k03-extension-other-torch-npu"
SITE = "usr/local/python3.11.13/lib/python3.11/site-packages"
TARGET_RATIO = 10.0
FILES_PER_DIST = 10
SIZES = (0, 1000, 10000)
SUFFIX = ".cpython-311-x86_64-linux-gnu.so"

#: What the scenario's torch/lib/libc10.so exports: ``c10::Error::Error(SourceLocation, std::string)``.
_C10_DECL = (
    "#include <string>\nnamespace c10 {\nstruct SourceLocation { const char* function; const char* file; unsigned line; };\n"
    "class Error { public: Error(SourceLocation loc, std::string msg); char pad[64]; };\n}\n"
)
_SOURCES = {
    "pure_c": ("gcc", "c", "int PyInit_pure_c(void) { return 0; }\n", []),
    "libm": ("gcc", "c", "#include <math.h>\ndouble PyInit_libm(double x) { return sqrt(x) + sin(x); }\n", ["-lm"]),
    "cxx_string": (
        "g++",
        "cc",
        '#include <string>\nstd::string npd_name(const std::string& s) { return s + "x"; }\n'
        'extern "C" int PyInit_cxx_string(void) { return (int)npd_name("a").size(); }\n',
        [],
    ),
    "torch_ext": (
        "g++",
        "cc",
        _C10_DECL + 'extern "C" int PyInit_torch_ext(void) { c10::Error e({"f", "m.cc", 1}, "a"); return e.pad[0]; }\n',
        ["LIBC10"],
    ),
}
_C10_STUB = _C10_DECL + "c10::Error::Error(c10::SourceLocation, std::string) : pad() {}\n"


def build_modules(work: Path) -> Optional[Dict[str, Path]]:
    """The extension modules (name -> file), compiled once; ``None`` without gcc/g++."""
    if shutil.which("gcc") is None or shutil.which("g++") is None:
        return None
    work.mkdir(parents=True, exist_ok=True)
    stub_dir = work / "c10"
    stub_dir.mkdir(exist_ok=True)
    (work / "c10.cc").write_text(_C10_STUB)
    c10 = stub_dir / "libc10.so"
    cmd = ["g++", "-shared", "-fPIC", "-O1", "-Wl,-soname,libc10.so", "-o", str(c10), str(work / "c10.cc")]
    subprocess.run(cmd, check=True, capture_output=True)
    out: Dict[str, Path] = {}
    for name, (cc, ext, source, libs) in _SOURCES.items():
        src = work / f"{name}.{ext}"
        src.write_text(source)
        target = work / f"{name}{SUFFIX}"
        extra = [f"-L{stub_dir}", "-lc10"] if "LIBC10" in libs else libs
        cmd = [cc, "-shared", "-fPIC", "-O1", "-o", str(target), str(src), *extra]
        subprocess.run(cmd, check=True, capture_output=True)
        out[name] = target
    return out


def _record_line(site: Path, path: Path) -> str:
    data = path.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path.relative_to(site).as_posix()},sha256={digest},{len(data)}"


def add_files(site: Path, files: int, modules: Dict[str, Path]) -> int:
    """Add ``files // FILES_PER_DIST`` distributions (10 files each) to ``site``; the number
    of files added."""
    kinds = sorted(modules)
    for i in range(files // FILES_PER_DIST):
        name, version = f"bench_native_{i:05d}", f"1.{i % 7}.{i % 13}"
        kind = kinds[i % len(kinds)]
        pkg = site / name
        (pkg / "sub").mkdir(parents=True)
        (pkg / "__init__.py").write_text(f"from .core import VALUE\n__version__ = {version!r}\n")
        (pkg / "core.py").write_text(f"VALUE = {i}\n")
        (pkg / "data.json").write_text(json.dumps({"kind": kind}) + "\n")
        (pkg / "sub" / "__init__.py").write_text("")
        shutil.copyfile(modules[kind], pkg / f"_{kind}{SUFFIX}")
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\nRequires-Dist: numpy>=1.21\n"
        )
        (info / "WHEEL").write_text(
            "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"
        )
        (info / "INSTALLER").write_text("pip\n")
        (info / "top_level.txt").write_text(name + "\n")
        lines = [_record_line(site, p) for p in sorted(pkg.rglob("*")) if p.is_file()]
        lines += [_record_line(site, info / n) for n in ("METADATA", "WHEEL", "INSTALLER", "top_level.txt")]
        lines.append(f"{name}-{version}.dist-info/RECORD,,")
        (info / "RECORD").write_text("\n".join(lines) + "\n")
    return files // FILES_PER_DIST * FILES_PER_DIST


def make_tree(base: Path, files: int, modules: Dict[str, Path]) -> Path:
    """A copy of the scenario with ``files`` files added to its site-packages."""
    scenario = base / f"{SCENARIO.name}-{files}"
    shutil.copytree(SCENARIO, scenario, symlinks=True)
    add_files(scenario / "root" / SITE, files, modules)
    return scenario


def _above(t0: float, t1: float, t2: float) -> str:
    """``(t2 - t0) / (t1 - t0)``: what the 10,000 files cost over what the 1,000 cost; "n/a"
    when the 1,000-file tree did not take longer than the 0-file one (noise)."""
    return f"{(t2 - t0) / (t1 - t0):.2f}x" if t1 > t0 else "n/a (1,000 files within the noise of 0)"


def run(repeat: int) -> List[str]:
    """Rotated rounds of ``python -c pass`` and, per tree, check cold then warm."""
    from bench import Run, launcher, measure
    from benchmarks.health import scenario_env  # scripts/benchmarks/health.py

    lines: List[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        modules = build_modules(base / "modules")
        if modules is None:
            return ["gcc/g++ not found: no ELF modules to build, nothing measured"]
        npd = str(launcher(base, REPO))
        trees = {files: make_tree(base, files, modules) for files in SIZES}
        home = base / "home"
        home.mkdir()
        envs = {files: dict(scenario_env(tree), HOME=str(home)) for files, tree in trees.items()}
        argvs = {files: [npd, "check", "--root", str(tree / "root")] for files, tree in trees.items()}
        passes: List[Run] = []
        cold: Dict[int, List[Run]] = {files: [] for files in SIZES}
        warm: Dict[int, List[Run]] = {files: [] for files in SIZES}
        tasks: List[Optional[int]] = [None, *SIZES]
        for files in SIZES:  # page cache in place
            measure(argvs[files], env=dict(envs[files], NPUDOCTOR_CACHE_DIR=str(base / "cache-warmup")))
        for r in range(repeat):
            for task in tasks[r % len(tasks) :] + tasks[: r % len(tasks)]:
                if task is None:
                    passes.append(measure([sys.executable, "-c", "pass"], env={"PATH": "/usr/bin:/bin"}))
                    continue
                cache = base / f"cache-{task}-{r}"
                env = dict(envs[task], NPUDOCTOR_CACHE_DIR=str(cache))
                cold[task].append(measure(argvs[task], env=env))
                warm[task].append(measure(argvs[task], env=env))
                shutil.rmtree(cache, ignore_errors=True)

    def med(rs: List[Run]) -> Tuple[float, float]:
        return median([r.wall for r in rs]), median([r.cpu for r in rs])

    def fig(name: str, rs: List[Run]) -> str:
        wall, cpu = med(rs)
        return f"{name:<44} {wall * 1000:8.1f} ms wall, {cpu * 1000:7.1f} ms CPU"

    small, big = SIZES[1], SIZES[2]
    lines.append(f"{repeat} rounds, order rotated; console script; medians; {SCENARIO.name}")
    lines.append(fig("python -c pass", passes))
    met = True
    for state, runs in (("cold", cold), ("warm", warm)):
        for files in SIZES:
            lines.append(fig(f"check --root, {files:,} files added, {state}", runs[files]))
        (w0, c0), (w1, c1), (w2, c2) = (med(runs[f]) for f in SIZES)
        ratio, cpu_ratio = w2 / w1, c2 / c1
        met = met and ratio <= TARGET_RATIO
        lines.append(
            f"  {state}: {big:,} / {small:,} files = {ratio:.2f}x wall (CPU {cpu_ratio:.2f}x); "
            f"above the 0-file tree: {_above(w0, w1, w2)} wall (CPU {_above(c0, c1, c2)})"
        )
    verdict = "met" if met else "NOT met"
    lines.append(f"target: {big:,} files <= {TARGET_RATIO:g}x the time of {small:,}, cold and warm: {verdict}")
    return lines
