"""The data of ``npudoctor lint``: ``npudoctor/knowledge/data/lint.toml`` (torch.cuda API names,
CUDA graph APIs, the AMP API by torch_npu release line, the NPU settings of cuDNN / cuBLAS flags,
launch-script variables and commands, CUDA-only libraries, CUDA base images) read once into frozen
records.  Library entries that name a ``cuda_only.toml`` entry take its reason and NPU
replacement from there, so ``check`` (installed packages) and ``lint`` (imports) give the same
advice."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from npudoctor import tomlread
from npudoctor.knowledge import cuda_only
from npudoctor.knowledge.versions import major_minor
from npudoctor.record import Record


class AmpApi(Record):
    """The mixed-precision API of torch_npu release lines ``>= min`` (a ``(major, minor)``):
    the autocast context, the gradient scaler, and the decorators of a custom autograd
    Function's forward and backward."""

    min: Tuple[int, int]
    autocast: str
    grad_scaler: str
    custom_fwd: str
    custom_bwd: str


class EnvVar(Record):
    """A variable only the CUDA stack reads; ``npu`` is the one the NPU stack reads ("" none).
    ``name`` ending in ``*`` is a prefix."""

    name: str
    npu: str


class Library(Record):
    """A CUDA-only library by its top-level import name: ``short`` is the one line a finding
    says (naming the module), ``why`` the whole reason."""

    module: str
    severity: str
    why: str
    npu_replacement: str
    short: str


class Flag(Record):
    """A cuDNN / cuBLAS flag with an NPU setting: ``npu`` with ``{}`` for the value assigned,
    its default ``npu_default``, the first torch_npu line ``since`` that has it (``None``:
    every line), and a ``note`` for the reader ("" none)."""

    name: str
    npu: str
    npu_default: bool
    since: Optional[Tuple[int, int]]
    note: str


class Float64(Record):
    """What asks for float64 tensors: the dtypes by qualified name, the tensor methods that
    convert to it, and the calls whose positional argument is a dtype."""

    dtypes: Tuple[str, ...]
    methods: Tuple[str, ...]
    dtype_calls: Tuple[str, ...]


class Image(Record):
    """A CUDA base image: ``pattern`` fully matches a FROM line's image reference."""

    pattern: str
    what: str


class LintKnowledge(Record):
    cuda_api: Dict[str, str]
    graphs: Dict[str, str]
    amp: Tuple[AmpApi, ...]
    env: Tuple[EnvVar, ...]
    commands: Dict[str, str]
    libraries: Dict[str, Library]
    float64: Float64
    images: Tuple[Image, ...]
    npu_base_image: str
    flags: Dict[str, Flag]
    nvtx: Dict[str, str]
    mstx_first: Tuple[str, ...]

    def amp_for(self, torch_npu: Optional[Tuple[int, int]]) -> Optional[AmpApi]:
        """The AMP API of the torch_npu release line ``torch_npu``; ``None`` when unknown."""
        if torch_npu is None:
            return None
        for api in sorted(self.amp, key=lambda a: a.min, reverse=True):
            if torch_npu >= api.min:
                return api
        return None

    def amp_unknown(self, pick: str, spell: Callable[[str], str] = str) -> str:
        """The advice for the AMP API ``pick`` (an :class:`AmpApi` field) when the torch_npu
        line is not known: the newest spelling with the first line that has it, else the
        oldest; ``spell`` turns an API as the data spells it into the text advised (the
        user's arguments added)."""
        rows = sorted(self.amp, key=lambda a: a.min, reverse=True)
        new, old = spell(str(getattr(rows[0], pick))), spell(str(getattr(rows[-1], pick)))
        if new == old:
            return new
        since = min(a.min for a in rows if spell(str(getattr(a, pick))) == new)
        return (
            f"{new} with torch_npu >= {since[0]}.{since[1]}, else {old} (torch_npu version not known: give --torch-npu)"
        )

    def mstx_in(self, line: Optional[Tuple[int, int]]) -> Optional[str]:
        """Which releases of the torch_npu release line ``line`` have the mstx ranges: "" all
        of them, the first one's version ("2.1.0.post8 and later"), or ``None`` none; the
        releases of every line when ``line`` is not known."""
        firsts = [(major_minor(v), v) for v in self.mstx_first]
        if line is None:
            return ", ".join(v for _l, v in firsts[:-1]) + f", {firsts[-1][1]} and later"
        last = firsts[-1][0]
        if last is not None and line >= last:
            return ""
        return next((f"{v} and later" for known, v in firsts if known == line), None)

    def env_var(self, name: str) -> Optional[EnvVar]:
        for var in self.env:
            if var.name == name:
                return var
        for var in self.env:
            if var.name.endswith("*") and name.startswith(var.name[:-1]):
                return var
        return None


def data_path() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "knowledge", "data", "lint.toml")


def _strings(table: Any) -> Dict[str, str]:
    return {str(k): str(v) for k, v in dict(table or {}).items() if k not in ("sources", "first")}


def _version(text: str) -> Tuple[int, int]:
    """``(major, minor)`` of a release line the lint data names (``min = "2.3"``); the data
    is checked at build time, so a line that is not ``X.Y`` is an error in the data."""
    line = major_minor(text)
    if line is None:
        raise ValueError(f"lint data: {text!r} is not a release line X.Y")
    return line


def _library(raw: Dict[str, Any]) -> Library:
    entry_id = str(raw.get("entry", ""))
    why, replacement, severity = str(raw.get("why", "")), str(raw.get("npu_replacement", "")), ""
    if entry_id:
        found = [e for e in cuda_only.entries() if e.id == entry_id]
        if not found:
            raise ValueError(f"lint.toml: library {raw.get('module')!r} names unknown cuda_only entry {entry_id!r}")
        why, replacement, severity = found[0].why, found[0].npu_replacement, found[0].severity
    return Library(
        module=str(raw["module"]),
        severity=str(raw.get("severity", severity or "error")),
        why=why,
        npu_replacement=replacement,
        short=str(raw.get("short") or f"{raw['module']} is CUDA-only: {why.split('. ')[0]}"),
    )


_CACHE: List[LintKnowledge] = []


def load() -> LintKnowledge:
    """The bundled lint knowledge, parsed once per process.  Raises ``ValueError`` for a
    malformed file (a packaging error, found by ``tests/test_lint.py``)."""
    if _CACHE:
        return _CACHE[0]
    doc = tomlread.load_bundled(data_path())
    libraries = [_library(raw) for raw in doc.get("library", [])]
    f64 = dict(doc.get("float64") or {})
    knowledge = LintKnowledge(
        cuda_api=_strings(doc.get("cuda_api")),
        graphs=_strings(doc.get("graphs")),
        amp=tuple(
            AmpApi(
                _version(str(a["min"])),
                str(a["autocast"]),
                str(a["grad_scaler"]),
                str(a["custom_fwd"]),
                str(a["custom_bwd"]),
            )
            for a in doc.get("amp", [])
        ),
        env=tuple(EnvVar(str(e["name"]), str(e.get("npu", ""))) for e in doc.get("env", [])),
        commands={str(c["name"]): str(c.get("npu", "")) for c in doc.get("command", [])},
        libraries={lib.module: lib for lib in libraries},
        float64=Float64(
            dtypes=tuple(str(x) for x in f64.get("dtypes", [])),
            methods=tuple(str(x) for x in f64.get("methods", [])),
            dtype_calls=tuple(str(x) for x in f64.get("dtype_calls", [])),
        ),
        images=tuple(Image(str(i["pattern"]), str(i["what"])) for i in doc.get("image", [])),
        npu_base_image=str(dict(doc.get("base_image") or {}).get("npu", "")),
        nvtx=_strings(doc.get("nvtx")),
        mstx_first=tuple(str(v) for v in dict(doc.get("nvtx") or {}).get("first", [])),
        flags={
            str(f["name"]): Flag(
                str(f["name"]),
                str(f["npu"]),
                bool(f["npu_default"]),
                _version(str(f["since"])) if "since" in f else None,
                str(f.get("note", "")),
            )
            for f in doc.get("flag", [])
        },
    )
    _CACHE.append(knowledge)
    return knowledge
