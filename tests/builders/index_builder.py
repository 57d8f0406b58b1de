"""A local package index for planner tests: small but real wheels, served by pip.

Every wheel built here is a valid, installable wheel (``METADATA`` with ``Requires-Dist``,
``WHEEL`` with its tags, ``RECORD`` with sha256 digests, one importable module), so pip
resolves, downloads and installs them exactly like the real ones.  Which torch_npu wheels
exist (versions, CPython tags, platform tags) is taken from the recorded PyPI JSON
(``tests/fixtures/plan/pypi-torch-npu.json``, copied from
``../shared/matrix/official/pypi-torch-npu.json``), and a few are left out on purpose so the
tests see the gaps a real user meets.

Two indexes are built, like in real life:

* ``pypi/``      torch_npu, torch (aarch64, and x86_64 from 2.12.0 on), numpy, pyyaml and
                 the CANN Python dependencies;
* ``torch-cpu/`` the PyTorch CPU index: ``torch==X+cpu`` for x86_64.

Each is a PEP 503 "simple" tree (``simple/<project>/index.html``) and can be served from a
loopback HTTP server (:func:`serve`) or used with ``--find-links`` (the flat ``files/`` dir).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import http.server
import io
import json
import os
import re
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
ARCHES = ("aarch64", "x86_64")
_M2014 = "manylinux_2_17_{arch}.manylinux2014_{arch}"
_M228 = "manylinux_2_28_{arch}"


@dataclass
class Dist:
    """One wheel to build."""

    name: str
    version: str
    tag: str = "py3-none-any"  # "{python}-{abi}-{platform}"
    requires: Sequence[str] = ()
    requires_python: Optional[str] = None
    module: Optional[str] = None  # import name (default: the name with "-" → "_")

    @property
    def filename(self) -> str:
        return f"{_norm(self.name).replace('-', '_')}-{self.version}-{self.tag}.whl"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _cp(py: str) -> str:
    return "cp" + py.replace(".", "")


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(dist: Dist, directory: Path) -> Path:
    """Write ``dist`` as a real wheel into ``directory``; returns its path."""
    module = dist.module or _norm(dist.name).replace("-", "_")
    info = f"{_norm(dist.name).replace('-', '_')}-{dist.version}.dist-info"
    meta = [
        "Metadata-Version: 2.1",
        f"Name: {dist.name}",
        f"Version: {dist.version}",
        "Summary: test stand-in built by tests/builders/index_builder.py",
    ]
    if dist.requires_python:
        meta.append(f"Requires-Python: {dist.requires_python}")
    meta += [f"Requires-Dist: {r}" for r in dist.requires]
    pure = dist.tag.endswith("-none-any")
    wheel_meta = ["Wheel-Version: 1.0", "Generator: index_builder", f"Root-Is-Purelib: {'true' if pure else 'false'}"]
    py, abi, plats = dist.tag.split("-")
    for p in py.split("."):
        for a in abi.split("."):
            for pl in plats.split("."):
                wheel_meta.append(f"Tag: {p}-{a}-{pl}")
    files = {
        f"{module}/__init__.py": f"__version__ = {dist.version!r}\nBUILT_FOR = {dist.tag!r}\n".encode(),
        f"{info}/METADATA": ("\n".join(meta) + "\n").encode(),
        f"{info}/WHEEL": ("\n".join(wheel_meta) + "\n").encode(),
    }
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / dist.filename
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            info_ = zipfile.ZipInfo(path, date_time=(2024, 1, 1, 0, 0, 0))
            info_.external_attr = 0o644 << 16
            zf.writestr(info_, data)
    out.write_bytes(buf.getvalue())
    return out


@functools.lru_cache(maxsize=None)
def _pypi_record(path: str) -> Dict[str, List[str]]:
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    return {v: [f["filename"] for f in files] for v, files in raw["releases"].items()}


def torch_npu_dists(pypi_json: Path, versions: Iterable[str], drop: Iterable[Tuple[str, str, str]] = ()) -> List[Dist]:
    """torch_npu wheels exactly as the recorded PyPI listing has them for ``versions``
    (same CPython and platform tags), minus ``drop`` = (version, python, arch) triples.

    Requires-Dist follows the real wheels (REPORT.md §2): x86_64 wheels up to 2.11.x pin
    ``torch==X+cpu``, aarch64 wheels and x86_64 from 2.12.0 pin ``torch==X``."""
    from packaging.utils import parse_wheel_filename
    from packaging.version import Version

    dropped = set(drop)
    record = _pypi_record(str(pypi_json))
    out = []
    for version in versions:
        for filename in record[version]:
            _n, ver, _b, tags = parse_wheel_filename(filename)
            tag = next(iter(tags))
            arch = "x86_64" if tag.platform.endswith("x86_64") else "aarch64"
            py = f"{tag.interpreter[2]}.{tag.interpreter[3:]}"
            if (version, py, arch) in dropped:
                continue
            torch = Version(str(ver)).base_version
            local = "+cpu" if arch == "x86_64" and Version(torch) < Version("2.12.0") else ""
            tag_text = filename[len(f"torch_npu-{version}-") : -len(".whl")]
            out.append(Dist("torch_npu", version, tag_text, requires=[f"torch=={torch}{local}"]))
    return out


#: What torch 2.10.0's METADATA declares for CUDA (PyPI's aarch64 wheel is a CPU build, yet it
#: names the CUDA wheels with an x86_64 marker; issue 16): pip evaluates the marker for the
#: machine it runs on, not for the site.
NVIDIA_ON_X86 = 'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux" and platform_machine == "x86_64"'
TRITON_ON_X86 = 'triton==3.5.0; platform_system == "Linux" and platform_machine == "x86_64"'
#: PyPI's aarch64 torch after 2.10 is a CUDA build: it needs the CUDA wheels on aarch64 too.
NVIDIA_ON_LINUX = 'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux"'


def torch_dists(version: str, pythons: Sequence[str], *, cpu_local: bool) -> Tuple[List[Dist], List[Dist]]:
    """torch ``version`` wheels: (for the PyPI index, for the PyTorch CPU index), like the
    real ones (REPORT.md §2; issue 16):

    * x86_64: ``X+cpu`` on the CPU index (PyPI's x86_64 torch is a CUDA build, left out);
    * aarch64 up to 2.10: PyPI's CPU-only build; 2.10.0 carries the ``nvidia-*``/``triton``
      requirements marked ``platform_machine == "x86_64"``;
    * aarch64 from 2.11: a CUDA build on PyPI (requires ``nvidia-*`` on Linux) and ``X+cpu``
      on the CPU index.

    Real torch depends on filelock, sympy, typing-extensions...; two of them are kept so
    the resolver has transitive work.  ``cpu_local`` False (torch_npu's x86_64 wheels pin
    plain ``torch==X`` from 2.12.0): below 2.11 the CPU index's x86_64 build is plain ``X``."""
    from packaging.version import Version

    requires = ["filelock", "typing-extensions>=4.8.0"]
    pypi: List[Dist] = []
    cpu: List[Dist] = []
    new = Version(version) >= Version("2.11.0")
    for py in pythons:
        cp = _cp(py)
        a64 = f"{cp}-{cp}-{_M228.format(arch='aarch64')}"
        x86 = f"{cp}-{cp}-{_M228.format(arch='x86_64')}"
        if new:
            pypi.append(Dist("torch", version, a64, requires + [NVIDIA_ON_LINUX]))
            cpu.append(Dist("torch", version + "+cpu", a64, requires))
        elif version == "2.10.0":
            pypi.append(Dist("torch", version, a64, requires + [NVIDIA_ON_X86, TRITON_ON_X86]))
        else:
            pypi.append(Dist("torch", version, a64, requires))
        cpu.append(Dist("torch", version + ("+cpu" if cpu_local or new else ""), x86, requires))
    return pypi, cpu


def cuda_dists() -> List[Dist]:
    """Stand-ins of the CUDA wheels a wrong plan would pull in (so a resolver that follows
    the x86_64 markers on an aarch64 site really finds and bundles them)."""
    out = []
    for arch in ARCHES:
        out.append(Dist("nvidia-cublas-cu12", "12.8.4.1", f"py3-none-{_M2014.format(arch=arch)}", module="nvidia"))
    for py in PYTHONS[2:]:
        cp = _cp(py)
        out.append(Dist("triton", "3.5.0", f"{cp}-{cp}-{_M2014.format(arch='x86_64')}"))
    return out


#: CANN Python dependencies (REPORT.md §6.2) and a few more that real plans pull in;
#: pure-Python stand-ins.
PURE = {
    "pyyaml": "6.0.1",
    "decorator": "5.1.1",
    "attrs": "23.2.0",
    "psutil": "5.9.8",
    "absl-py": "2.1.0",
    "cloudpickle": "3.0.0",
    "ml-dtypes": "0.4.0",
    "scipy": "1.10.1",
    "tornado": "6.4",
    "sympy": "1.12",
    "mpmath": "1.3.0",
    "cffi": "1.16.0",
    "protobuf": "3.20.3",
    "pathlib2": "2.3.7",
    "requests": "2.31.0",
    "cython": "3.0.10",
    "setuptools": "69.5.1",
    "filelock": "3.13.1",
    "typing-extensions": "4.10.0",
    "wheel": "0.43.0",
}


#: A protobuf newer than CANN's 3.20 line (``PURE`` holds 3.20.3).
PROTOBUF_NEWEST = "7.34.1"


def default_dists(pypi_json: Path) -> Tuple[List[Dist], List[Dist]]:
    """The standard test universe: (PyPI index, PyTorch CPU index).

    torch_npu 2.1.0.post10, 2.6.0, 2.6.0.post5, 2.7.1.post8, 2.10.0.post4, 2.11.0, 2.12.0 as
    on PyPI, except 2.7.1.post8 for cp312/x86_64 (left out on purpose); torch as
    :func:`torch_dists` describes; CUDA stand-ins (nvidia-cublas-cu12,
    triton) on the PyPI index; numpy 1.26.4 for cp39–cp312 and 2.1.2 for cp310–cp313
    (so ``numpy<2`` has no cp313 wheel and 1.x none for cp38)."""
    pypi = torch_npu_dists(
        pypi_json,
        ["2.1.0.post10", "2.6.0", "2.6.0.post5", "2.7.1.post8", "2.10.0.post4", "2.11.0", "2.12.0"],
        drop=[("2.7.1.post8", "3.12", "x86_64")],
    )
    pypi += cuda_dists()
    cpu: List[Dist] = []
    for version, pys, local in (
        ("2.1.0", PYTHONS[:4], True),
        ("2.6.0", PYTHONS[1:5], True),
        ("2.7.1", PYTHONS[1:], True),
        ("2.10.0", PYTHONS[2:], True),
        ("2.11.0", PYTHONS[2:], True),
        ("2.12.0", PYTHONS[2:], False),
    ):
        a, b = torch_dists(version, pys, cpu_local=local)
        pypi += a
        cpu += b
    for arch in ARCHES:
        for py in PYTHONS[1:5]:
            pypi.append(Dist("numpy", "1.26.4", f"{_cp(py)}-{_cp(py)}-{_M2014.format(arch=arch)}"))
        for py in PYTHONS[2:]:
            pypi.append(Dist("numpy", "2.1.2", f"{_cp(py)}-{_cp(py)}-{_M2014.format(arch=arch)}"))
    for name, version in PURE.items():
        requires = ["mpmath>=1.1.0"] if name == "sympy" else []
        module = {"pyyaml": "yaml", "absl-py": "absl"}.get(name)
        pypi.append(Dist(name, version, requires=requires, module=module))
    # the newest protobuf line as on PyPI: what a bare `protobuf` requirement would bundle
    pypi.append(Dist("protobuf", PROTOBUF_NEWEST))
    return pypi, cpu


@dataclass
class LocalIndex:
    """Built index trees: ``root/<name>/files/*.whl`` and ``root/<name>/simple/``."""

    root: Path
    files: Dict[str, Path] = field(default_factory=dict)  # index name -> files dir

    def simple(self, name: str) -> Path:
        return self.root / name / "simple"


def build_index(root: Path, indexes: Dict[str, List[Dist]]) -> LocalIndex:
    """Build each named index under ``root`` as flat files plus a PEP 503 simple tree."""
    out = LocalIndex(root)
    for name, dists in indexes.items():
        files = root / name / "files"
        by_project: Dict[str, List[Path]] = {}
        for dist in dists:
            path = build_wheel(dist, files)
            by_project.setdefault(_norm(dist.name), []).append(path)
        simple = root / name / "simple"
        simple.mkdir(parents=True, exist_ok=True)
        links = []
        for project, paths in sorted(by_project.items()):
            pdir = simple / project
            pdir.mkdir(exist_ok=True)
            anchors = []
            for p in sorted(paths):
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
                anchors.append(f'<a href="../../files/{p.name}#sha256={digest}">{p.name}</a><br/>')
            (pdir / "index.html").write_text(
                "<!DOCTYPE html><html><body>\n" + "\n".join(anchors) + "\n</body></html>\n", encoding="utf-8"
            )
            links.append(f'<a href="{project}/">{project}</a><br/>')
        (simple / "index.html").write_text("<html><body>\n" + "\n".join(links) + "\n</body></html>\n")
        out.files[name] = files
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port) for the duration; yields the base
    URL (``http://127.0.0.1:PORT``)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def pypi_json_path() -> Path:
    """The recorded PyPI JSON copied into the fixtures."""
    return Path(__file__).resolve().parents[1] / "fixtures" / "plan" / "pypi-torch-npu.json"


if __name__ == "__main__":  # build a universe for manual experiments
    import sys

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "local-index")
    pypi, cpu = default_dists(pypi_json_path())
    built = build_index(target, {"pypi": pypi, "torch-cpu": cpu})
    print(os.fspath(built.root))
