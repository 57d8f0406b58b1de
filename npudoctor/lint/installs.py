"""What a project installs: requirements files, ``pip install`` commands (in shell scripts,
Dockerfile ``RUN`` instructions, notebook ``!`` lines) and Dockerfiles.  A requirement on a
CUDA-only distribution is judged with the data ``npudoctor check`` uses for installed packages
(:mod:`npudoctor.knowledge.cuda_only`), by name only where the name identifies it (or lint
already reports its import by name); a ``+cuNNN`` version and the PyTorch CUDA wheel index
always.  Line based, like the shell linter: nothing is executed or resolved."""

from __future__ import annotations

import re
from typing import AbstractSet, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.knowledge import cuda_only
from npudoctor.lint import shell
from npudoctor.lint.knowledge import LintKnowledge
from npudoctor.parsers.metadata import canonical_name

Hit = Tuple[int, int, str, str, str, Optional[str]]

#: The PyTorch wheel index of a CUDA build (download.pytorch.org/whl/cu121, .../whl/nightly/cu128).
CUDA_INDEX = lazyre.pattern(r"download\.pytorch\.org/whl/(?:nightly/|test/)?(cu\d+)")
#: A requirement: its name, extras, then the version part (``flash-attn>=2``, ``torch==2.1.0+cu121``).
_SPEC = lazyre.pattern(r"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*(.*)")
_LOCAL = lazyre.pattern(r"===?\s*[^\s,;+]+\+([A-Za-z0-9.]+)")
_PIP = lazyre.pattern(r"(?:^|[\s;&|(`])(?:\S*/)?(?:pip3?(?:\.\d+)?|python3?(?:\.\d+)?\s+-m\s+pip|uv\s+pip)\s+install\b")
#: Options of ``pip install`` that take a value as the next word.
_TAKES_VALUE = {
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-e",
    "--editable",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--src",
    "--upgrade-strategy",
    "--no-binary",
    "--only-binary",
    "--platform",
    "--python-version",
    "--implementation",
    "--abi",
    "--trusted-host",
    "--timeout",
    "--retries",
    "--cache-dir",
    "--progress-bar",
    "-C",
    "--config-settings",
    "--global-option",
    "--log",
    "--python",
}
_SHELL_END = {"&&", "||", ";", "|", "&", ")"}


def _cuda_torch() -> Optional[cuda_only.Entry]:
    """The data's entry for a CUDA build of torch (its NPU replacement names the CPU build)."""
    return next((e for e in cuda_only.entries() if e.id == "torch-cuda-build"), None)


def requirement(
    text: str, k: LintKnowledge, beside: AbstractSet[str] = frozenset()
) -> Optional[Tuple[str, str, str, Optional[str]]]:
    """``(code, message, fix, severity)`` when the requirement ``text`` (one requirement, no
    options) asks for a CUDA-only distribution; ``beside``: the canonical names the same
    file or command also installs (an entry that is a problem only beside another one)."""
    m = _SPEC.fullmatch(text.strip().split(";")[0].strip())
    if m is None:
        return None
    name, rest = m.group(1), m.group(2)
    local = _LOCAL.search(rest)
    if local and cuda_only.CUDA_LOCAL.match(local.group(1).lower()):
        torch = _cuda_torch()
        fix = f"on the NPU: {torch.npu_replacement}" if torch is not None and canonical_name(name) == "torch" else ""
        return (
            "LNT020",
            f"{name}{rest.strip()} is a CUDA build (local version +{local.group(1)})",
            fix or "the build without the +cuNNN tag (the CPU build beside torch_npu)",
            "error",
        )
    entry = cuda_only.entry_for(canonical_name(name))
    if entry is None:
        return None
    if entry.beside and not set(entry.beside) & beside:
        return None
    if not entry.name_enough and not set(entry.modules) & set(k.libraries):
        return None  # the name alone does not make it the CUDA build (torch)
    fix = f"on the NPU: {entry.npu_replacement}" if entry.npu_replacement else "no NPU build is published: remove it"
    return ("LNT020", f"{name} is CUDA-only: {entry.why}", fix, entry.severity)


def cuda_index(number: int, line: str) -> List[Hit]:
    """LNT020: the PyTorch CUDA wheel index named on the line."""
    out: List[Hit] = []
    for m in CUDA_INDEX.finditer(line):
        torch = _cuda_torch()
        fix = torch.npu_replacement if torch is not None and torch.npu_replacement else "the CPU index"
        out.append(
            (
                number,
                m.start(),
                "LNT020",
                f"the PyTorch CUDA wheel index ({m.group(1)}): torch resolves to a CUDA build",
                f"on the NPU: {fix}",
                None,
            )
        )
    return out


def _names(specs: List[str]) -> AbstractSet[str]:
    out = set()
    for spec in specs:
        m = _SPEC.fullmatch(spec.strip().split(";")[0].strip())
        if m:
            out.add(canonical_name(m.group(1)))
    return out


def scan_requirements(lines: List[str], k: LintKnowledge) -> List[Hit]:
    """A requirements or constraints file: each requirement and index option."""
    specs: List[Tuple[int, int, str]] = []
    out: List[Hit] = []
    for number, raw in enumerate(lines, 1):
        line = shell.strip_comment(raw).rstrip()
        out.extend(cuda_index(number, line))
        stripped = line.lstrip()
        if not stripped or stripped.startswith("-") or "://" in stripped.split("@")[0]:
            continue  # an option (-r, --extra-index-url, -e ...) or a bare URL
        specs.append((number, len(line) - len(stripped), stripped))
    beside = _names([s for _n, _c, s in specs])
    for number, col, spec in specs:
        found = requirement(spec.split(" @ ")[0] if " @ " in spec else spec, k, beside)
        if found:
            out.append((number, col) + found)
    return out


def _logical(lines: List[str]) -> List[Tuple[str, List[Tuple[int, int]]]]:
    """Lines joined at a trailing backslash: ``(text, [(offset in text, line number)...])``."""
    out: List[Tuple[str, List[Tuple[int, int]]]] = []
    text = ""
    starts: List[Tuple[int, int]] = []
    for number, raw in enumerate(lines, 1):
        line = shell.strip_comment(raw).rstrip()
        starts.append((len(text), number))
        if line.endswith("\\"):
            text += line[:-1] + " "
            continue
        out.append((text + line, starts))
        text, starts = "", []
    if starts:
        out.append((text, starts))
    return out


def _where(offset: int, starts: List[Tuple[int, int]]) -> Tuple[int, int]:
    line_start, number = starts[0]
    for begin, n in starts:
        if begin <= offset:
            line_start, number = begin, n
    return number, offset - line_start


def scan_pip(lines: List[str], k: LintKnowledge) -> List[Hit]:
    """``pip install`` commands (a command continued over lines with ``\\`` too): the
    requirements they name and their index options."""
    out: List[Hit] = []
    for text, starts in _logical(lines):
        for m in _PIP.finditer(text):
            words = [(w.start(), w.group(0).strip("'\"")) for w in re.finditer(r"\S+", text[m.end() :])]
            specs: List[Tuple[int, str]] = []
            skip = False
            for offset, word in words:
                if word in _SHELL_END or word.startswith(("&&", "||", ";", "|")):
                    break
                if skip:
                    skip = False
                    continue
                if word.startswith("-"):
                    skip = word in _TAKES_VALUE
                    continue
                if "://" in word or word.startswith((".", "/", "$")) or word.endswith(".whl"):
                    continue
                specs.append((m.end() + offset, word))
            beside = _names([s for _o, s in specs])
            for offset, spec in specs:
                found = requirement(spec, k, beside)
                if found:
                    out.append(_where(offset, starts) + found)
    return out


def _image(reference: str) -> str:
    ref = reference.lower()
    for prefix in ("docker.io/", "index.docker.io/"):
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
    return ref[len("library/") :] if ref.startswith("library/") else ref


_FROM = lazyre.pattern(r"\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE)
_ENV = lazyre.pattern(r"\s*(?:ENV|ARG)\s+([A-Za-z_][A-Za-z0-9_]*)(?:\s+|=)", re.IGNORECASE)


def scan_dockerfile(lines: List[str], k: LintKnowledge, whole: str, npus: Optional[int] = None) -> List[Hit]:
    """A Dockerfile: CUDA base images (LNT021), then its ENV and RUN lines as a shell script
    (variables only CUDA reads, NVIDIA tools, ``pip install`` of CUDA-only packages)."""
    out: List[Hit] = []
    for number, raw in enumerate(lines, 1):
        m = _FROM.match(raw)
        if m:
            image = _image(m.group(1))
            known = next((i for i in k.images if re.fullmatch(i.pattern, image)), None)
            if known is not None:
                fix = f"build on {k.npu_base_image}" if k.npu_base_image else "build on an Ascend (CANN) base image"
                out.append((number, m.start(1), "LNT021", f"FROM {m.group(1)}: {known.what}", fix, None))
            continue
        m = _ENV.match(raw)
        if m and m.group(0)[-1] != "=":  # the legacy form ``ENV NAME value`` (NAME=value is shell's)
            out.extend(shell.env_var(number, m.start(1), m.group(1), k, whole))
    return sorted(set(out + scan_shell(lines, k, whole, npus)))


def scan_shell(lines: List[str], k: LintKnowledge, whole: str, npus: Optional[int] = None) -> List[Hit]:
    """Shell lines (a script, Dockerfile instructions, notebook ``!`` lines): the shell
    linter's findings, ``pip install`` commands and the PyTorch CUDA wheel index."""
    out = shell.scan_lines(lines, k, whole, npus) + scan_pip(lines, k)
    for number, raw in enumerate(lines, 1):
        out.extend(cuda_index(number, shell.strip_comment(raw)))
    return sorted(set(out))
