"""The framework knowledge data under npudoctor/knowledge/data/frameworks/ is well formed.

cuda_only.toml              CUDA-only distributions and how to recognise them
framework_support.toml      framework support per Ascend chip family, build-info formats
prerelease_torch_npu.toml   pre-release torch_npu wheels and the CANN their METADATA names
torch_npu_requirements.toml what a framework release needs (torch_npu, extension line, CANN)

Each file has a checker that returns a list of problems; the tests assert the real files
have none, and that deliberately broken copies of them do (so the checks can fail).
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

DATA = Path(__file__).resolve().parent.parent / "npudoctor" / "knowledge" / "data" / "frameworks"

# The fixed vocabulary, kept here on purpose: a file that invents a chip family fails.
CHIP_FAMILIES = ("910b", "910_93", "310p", "310b", "910", "950")
FRAMEWORKS = (
    "vllm-ascend",
    "mindie",
    "mindspeed",
    "torchair",
    "apex-npu",
    "triton-ascend",
    "atb-models",
    "deepspeed",
    "lmdeploy",
    "sglang",
)
SUPPORT_STATUS = ("supported", "experimental", "unsupported", "not-stated")
CONFIDENCE = ("stated", "inferred")
SEVERITY = ("error", "warning")
# Versions probed to find rows of one framework and chip that claim the same release.
PROBE_VERSIONS = (
    "0.7.1rc1",
    "0.7.3",
    "0.9.0",
    "0.9.1rc1",
    "0.9.1",
    "0.9.2rc1",
    "0.10.0rc1",
    "0.11.0",
    "0.12.0rc1",
    "0.13.0",
    "0.14.0rc1",
    "0.18.0",
    "0.23.0",
    "3.2.0",
)
CUDA_LIBRARY = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|cudnn|c10_cuda|torch_cuda)\b")


def load(name: str) -> Dict[str, Any]:
    with open(DATA / name, "rb") as fh:
        return tomllib.load(fh)


# ---------------------------------------------------------------- helpers


def _text(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _sources(where: str, item: Dict[str, Any]) -> List[str]:
    src = item.get("sources")
    if not isinstance(src, list) or not src:
        return [f"{where}: no sources"]
    return [f"{where}: empty source #{i}" for i, s in enumerate(src) if not _text(s)]


def _regexes(where: str, patterns: Any) -> List[str]:
    if not isinstance(patterns, list):
        return [f"{where}: not a list of patterns"]
    out = []
    for p in patterns:
        try:
            re.compile(p)
        except (re.error, TypeError) as exc:
            out.append(f"{where}: pattern {p!r} does not compile ({exc})")
    return out


def _version(where: str, text: Any) -> List[str]:
    try:
        Version(str(text))
    except InvalidVersion:
        return [f"{where}: {text!r} is not a PEP 440 version"]
    return []


# ---------------------------------------------------------------- cuda_only.toml

CUDA_REQUIRED = (
    "id",
    "names",
    "examples",
    "severity",
    "name_enough",
    "why",
    "uninstall",
    "sources",
    "recognise",
    "error",
)


def cuda_only_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    if data.get("schema") != 1:
        out.append("schema is not 1")
    entries = data.get("entry")
    if not isinstance(entries, list) or not entries:
        return out + ["no [[entry]]"]
    seen = set()
    for n, e in enumerate(entries):
        where = f"entry {e.get('id', n)!r}"
        out += [f"{where}: missing {k}" for k in CUDA_REQUIRED if k not in e]
        if e.get("id") in seen:
            out.append(f"{where}: duplicate id")
        seen.add(e.get("id"))
        for k in ("why", "uninstall"):
            if k in e and not _text(e[k]):
                out.append(f"{where}: empty {k}")
        if e.get("severity") not in SEVERITY:
            out.append(f"{where}: severity {e.get('severity')!r} not in {SEVERITY}")
        if "npu_replacement" in e and not isinstance(e["npu_replacement"], str):
            out.append(f"{where}: npu_replacement is not text")
        out += _sources(where, e)
        names = e.get("names", [])
        name_problems = _regexes(f"{where} names", names)
        out += name_problems
        examples = e.get("examples", [])
        if not examples:
            out.append(f"{where}: no examples")
        if not name_problems:
            for ex in examples:
                if ex != canonicalize_name(ex):
                    out.append(f"{where}: example {ex!r} is not a canonical name")
                if not any(re.fullmatch(p, ex) for p in names):
                    out.append(f"{where}: example {ex!r} matches no name pattern")
        if "name_enough" in e and not isinstance(e["name_enough"], bool):
            out.append(f"{where}: name_enough is not a boolean")
        beside = e.get("beside", [])
        if not isinstance(beside, list) or any(b != canonicalize_name(str(b)) for b in beside):
            out.append(f"{where}: beside must list canonical names")
        rec = e.get("recognise", {})
        for key in ("requires_dist", "dt_needed", "files", "not_if_files"):
            out += _regexes(f"{where} recognise.{key}", rec.get(key, []))
        for key in ("local_version", "not_if_local_version"):
            if rec.get(key):
                out += _regexes(f"{where} recognise.{key}", [rec[key]])
        if not _text(rec.get("not_enough", "")):
            out.append(f"{where}: recognise.not_enough missing (say what the evidence does not prove)")
        err = e.get("error", {})
        if not isinstance(err, dict) or "text" not in err or not _text(err.get("source")):
            out.append(f"{where}: error needs text and a source (say 'none found' when there is none)")
        wheel = e.get("checked_wheel")
        if wheel is not None:
            out += _checked_wheel(where, wheel, rec)
    return out


def _checked_wheel(where: str, wheel: Dict[str, Any], rec: Dict[str, Any]) -> List[str]:
    out = []
    if not _text(wheel.get("file")) or not str(wheel.get("file")).endswith(".whl"):
        out.append(f"{where}: checked_wheel.file is not a wheel file name")
    size = wheel.get("size_mb")
    if not isinstance(size, (int, float)) or not 0 < size < 100:
        out.append(f"{where}: checked_wheel.size_mb {size!r} not in (0, 100): only wheels under 100 MB were read")
    seen = wheel.get("dt_needed_seen")
    if not isinstance(seen, list):
        return out + [f"{where}: checked_wheel.dt_needed_seen is not a list"]
    patterns = rec.get("dt_needed", [])
    try:
        compiled = [re.compile(p) for p in patterns]
    except re.error:
        return out
    for lib in seen:
        if CUDA_LIBRARY.match(lib) and compiled and not any(c.fullmatch(lib) for c in compiled):
            out.append(f"{where}: CUDA library {lib!r} seen in the real wheel matches no dt_needed pattern")
    return out


# ---------------------------------------------------------------- framework_support.toml

SUPPORT_REQUIRED = ("framework", "chip", "status", "versions", "first_version", "confidence", "note", "sources")
BUILD_INFO_REQUIRED = ("framework", "path", "versions", "records_soc", "format", "how_read", "note", "sources")


def framework_support_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    if data.get("schema") != 1:
        out.append("schema is not 1")
    if tuple(data.get("chip_families", ())) != CHIP_FAMILIES:
        out.append(f"chip_families {data.get('chip_families')!r} differ from the fixed vocabulary {CHIP_FAMILIES}")
    rows = data.get("support")
    if not isinstance(rows, list) or not rows:
        return out + ["no [[support]]"]
    claims: Dict[tuple, List[tuple]] = {}
    for n, r in enumerate(rows):
        where = f"support #{n} ({r.get('framework')}, {r.get('chip')})"
        out += [f"{where}: missing {k}" for k in SUPPORT_REQUIRED if k not in r]
        if r.get("framework") not in FRAMEWORKS:
            out.append(f"{where}: framework not in {FRAMEWORKS}")
        if r.get("chip") not in CHIP_FAMILIES:
            out.append(f"{where}: chip {r.get('chip')!r} not in {CHIP_FAMILIES}")
        if r.get("status") not in SUPPORT_STATUS:
            out.append(f"{where}: status {r.get('status')!r} not in {SUPPORT_STATUS}")
        if r.get("confidence") not in CONFIDENCE:
            out.append(f"{where}: confidence {r.get('confidence')!r} not in {CONFIDENCE}")
        if not _text(r.get("note")):
            out.append(f"{where}: empty note")
        out += _sources(where, r)
        spec = None
        try:
            spec = SpecifierSet(r.get("versions", ""), prereleases=True)
        except InvalidSpecifier:
            out.append(f"{where}: versions {r.get('versions')!r} is not a PEP 440 specifier")
        first = r.get("first_version", "")
        if first:
            bad = _version(f"{where} first_version", first)
            out += bad
            if not bad and spec is not None and str(spec) and Version(first) not in spec:
                out.append(f"{where}: first_version {first} outside versions {spec}")
        if spec is not None and str(spec):
            claims.setdefault((r.get("framework"), r.get("chip")), []).append((n, spec))
    for (fw, chip), specs in claims.items():
        for v in PROBE_VERSIONS:
            hit = [n for n, s in specs if Version(v) in s]
            if len(hit) > 1:
                out.append(f"{fw}/{chip}: rows {hit} all claim version {v}")
    infos = data.get("build_info")
    if not isinstance(infos, list) or not infos:
        return out + ["no [[build_info]]"]
    for n, b in enumerate(infos):
        where = f"build_info #{n} ({b.get('framework')})"
        out += [f"{where}: missing {k}" for k in BUILD_INFO_REQUIRED if k not in b]
        if b.get("framework") not in FRAMEWORKS:
            out.append(f"{where}: framework not in {FRAMEWORKS}")
        if not isinstance(b.get("records_soc"), bool):
            out.append(f"{where}: records_soc is not true/false")
        if not _text(b.get("format")):
            out.append(f"{where}: empty format")
        out += _sources(where, b)
    return out


# ---------------------------------------------------------------- prerelease_torch_npu.toml

BUILD_REQUIRED = (
    "version",
    "base_line",
    "uploaded",
    "pythons",
    "wheel_checked",
    "requires_torch",
    "description_row",
    "cann_named",
    "cann_named_prerelease",
    "branch",
    "base_line_cann",
    "base_line_source",
    "sources",
)
CANN_VERSION = re.compile(r"^\d+\.\d+\.(\d+|RC\d+)(\.\d+)?(\.(alpha|beta)\d+)?$")


def prerelease_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    if data.get("schema") != 1:
        out.append("schema is not 1")
    builds = data.get("build")
    if not isinstance(builds, list) or not builds:
        return out + ["no [[build]]"]
    seen = set()
    for n, b in enumerate(builds):
        where = f"build {b.get('version', n)!r}"
        missing = [k for k in BUILD_REQUIRED if k not in b]
        out += [f"{where}: missing {k}" for k in missing]
        out += _sources(where, b)
        if missing:
            continue
        bad = _version(where, b["version"])
        out += bad
        if bad:
            continue
        v = Version(b["version"])
        if v in seen:
            out.append(f"{where}: duplicate version")
        seen.add(v)
        if not (v.is_prerelease or v.is_devrelease):
            out.append(f"{where}: not a pre-release or dev version")
        if b["base_line"] != v.base_version:
            out.append(f"{where}: base_line {b['base_line']!r} is not {v.base_version!r}")
        if f"-{b['version']}-" not in b["wheel_checked"] or not b["wheel_checked"].endswith(".whl"):
            out.append(f"{where}: wheel_checked {b['wheel_checked']!r} is not a wheel of this version")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(b["uploaded"])):
            out.append(f"{where}: uploaded {b['uploaded']!r} is not YYYY-MM-DD")
        if not b["pythons"] or not all(re.fullmatch(r"cp3\d+", p) for p in b["pythons"]):
            out.append(f"{where}: pythons {b['pythons']!r} are not cpXY tags")
        if b["requires_torch"] and b["base_line"] not in b["requires_torch"]:
            out.append(f"{where}: requires_torch {b['requires_torch']!r} does not pin torch {b['base_line']}")
        for key in ("cann_named", "base_line_cann"):
            if b[key] and not CANN_VERSION.match(b[key]):
                out.append(f"{where}: {key} {b[key]!r} is not a CANN version")
        if bool(b["cann_named"]) != bool(b["description_row"]):
            out.append(f"{where}: cann_named and description_row must be given together")
        if b["cann_named"] and b["cann_named"] not in b["description_row"]:
            out.append(f"{where}: cann_named {b['cann_named']!r} is not in its description_row")
        if b["cann_named_prerelease"] != bool(re.search(r"alpha|beta", b["cann_named"])):
            out.append(f"{where}: cann_named_prerelease disagrees with {b['cann_named']!r}")
        if b["base_line_cann"] and b["base_line_cann"] not in b["base_line_source"]:
            out.append(f"{where}: base_line_cann {b['base_line_cann']!r} is not quoted in base_line_source")
        if not _text(b["base_line_source"]):
            out.append(f"{where}: base_line_source empty (say why it is not established)")
    return out


# ---------------------------------------------------------------- torch_npu_requirements.toml

REQUIREMENT_PROJECTS = (
    "vllm-ascend",
    "triton-ascend",
    "mindspeed",
    "mindspeed-llm",
    "lmdeploy",
    "mindie",
    "atb-models",
)
PIP_REQUIREMENT_PROJECTS = ("vllm-ascend", "triton-ascend", "mindspeed", "mindspeed-llm", "lmdeploy")
#: Every framework of the assignment: a table of rows or an [[unstated]] entry saying why none.
ASSIGNED = ("vllm-ascend", "mindspeed", "mindspeed-llm", "mindie", "torchair", "deepspeed", "lmdeploy", "sglang")
INSTALL_KINDS = ("pypi", "source", "run-package")


def requirements_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    if data.get("schema") != 1:
        out.append("schema is not 1")
    rows = data.get("row")
    if not isinstance(rows, list) or not rows:
        return out + ["no [[row]]"]
    for n, r in enumerate(rows):
        where = f"row {n} ({r.get('project')} {r.get('versions')})"
        out += _sources(where, r)
        if r.get("project") not in REQUIREMENT_PROJECTS:
            out.append(f"{where}: project {r.get('project')!r} not in {REQUIREMENT_PROJECTS}")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(r.get("checked_on", ""))):
            out.append(f"{where}: checked_on {r.get('checked_on')!r} is not YYYY-MM-DD")
        versions = r.get("versions")
        if not isinstance(versions, list) or not versions:
            out.append(f"{where}: no versions")
            continue
        if r.get("project") in PIP_REQUIREMENT_PROJECTS:
            for spec in versions:
                try:
                    SpecifierSet(spec)
                except InvalidSpecifier:
                    out.append(f"{where}: {spec!r} is not a PEP 440 specifier")
        if r.get("torch_npu"):
            out += _version(where, r["torch_npu"])
        if r.get("cann_min") and not CANN_VERSION.match(r["cann_min"]):
            out.append(f"{where}: cann_min {r['cann_min']!r} is not a CANN version")
        for t in r.get("torch", []):
            if not re.fullmatch(r"\d+\.\d+\.\d+", str(t)):
                out.append(f"{where}: torch {t!r} is not an X.Y.Z release")
        for build in r.get("torch_npu_also", []):
            out += _version(where, build)
        by_torch = r.get("ext_by_torch", {})
        if not isinstance(by_torch, dict):
            out.append(f"{where}: ext_by_torch is not a table")
            by_torch = {}
        for t, line in by_torch.items():
            if not re.fullmatch(r"\d+\.\d+\.\d+", str(t)):
                out.append(f"{where}: ext_by_torch key {t!r} is not an X.Y.Z release")
            if not _text(line):
                out.append(f"{where}: ext_by_torch {t!r} names no extension line")
            if r.get("torch") and t not in r["torch"]:
                out.append(f"{where}: ext_by_torch names torch {t} its torch list lacks")
        if r.get("torch_npu_spec"):
            try:
                SpecifierSet(r["torch_npu_spec"])
            except InvalidSpecifier:
                out.append(f"{where}: torch_npu_spec {r['torch_npu_spec']!r} is not a PEP 440 specifier")
        if not (r.get("torch_npu") or r.get("ext") or r.get("cann_min") or r.get("torch") or r.get("torch_npu_spec")):
            out.append(f"{where}: says nothing (no torch_npu, ext, cann_min, torch or torch_npu_spec)")
    projects = data.get("project", {})
    for name in sorted({r.get("project") for r in rows}):
        meta = projects.get(name)
        if not isinstance(meta, dict):
            out.append(f"project {name!r} has rows but no [project.{name}] table")
            continue
        if meta.get("install") not in INSTALL_KINDS:
            out.append(f"[project.{name}]: install {meta.get('install')!r} not in {INSTALL_KINDS}")
        for key in ("label", "identify", "policy"):
            if not _text(meta.get(key)):
                out.append(f"[project.{name}]: empty {key}")
    unstated = data.get("unstated", [])
    for n, u in enumerate(unstated):
        where = f"unstated #{n} ({u.get('project')})"
        out += _sources(where, u)
        if not _text(u.get("says")):
            out.append(f"{where}: empty says")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(u.get("checked_on", ""))):
            out.append(f"{where}: checked_on {u.get('checked_on')!r} is not YYYY-MM-DD")
    covered = {r.get("project") for r in rows} | {u.get("project") for u in unstated}
    out += [
        f"framework {name!r} has neither rows nor an [[unstated]] entry" for name in ASSIGNED if name not in covered
    ]
    return out


# ---------------------------------------------------------------- vllm_ascend_images.toml

IMAGE_FAMILIES = ("910b", "910_93", "310p", "950")
#: The CANN 9.x pre-release spelling of the image tags (cann:9.1.0-beta.1-310p-...).
IMAGE_BETA = re.compile(r"^\d+\.\d+\.\d+-(alpha|beta)\.\d+$")


def images_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    if data.get("schema") != 1:
        out.append("schema is not 1")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(data.get("checked_on", ""))):
        out.append("checked_on is not YYYY-MM-DD")
    out += _sources("images", data)
    variants = data.get("variant", [])
    suffixes = [v.get("suffix") for v in variants]
    if len(set(suffixes)) != len(suffixes):
        out.append(f"duplicate variant suffixes {suffixes}")
    for v in variants:
        if v.get("family") not in IMAGE_FAMILIES:
            out.append(f"variant {v.get('suffix')!r}: family {v.get('family')!r} not in {IMAGE_FAMILIES}")
        if v.get("os") not in ("Ubuntu", "openEuler"):
            out.append(f"variant {v.get('suffix')!r}: os {v.get('os')!r}")
        if not _text(v.get("source")):
            out.append(f"variant {v.get('suffix')!r}: no source")
    for fam in IMAGE_FAMILIES:
        if not any(v.get("family") == fam and v.get("os") == "Ubuntu" for v in variants):
            out.append(f"no Ubuntu variant for {fam}")
    tags = [r.get("tag") for r in data.get("release", [])]
    if len(set(tags)) != len(tags):
        out.append("duplicate release tags")
    for r in data.get("release", []):
        where = f"release {r.get('tag')}"
        try:
            Version(str(r.get("tag", "")).lstrip("v"))
        except InvalidVersion:
            out.append(f"{where}: tag is not v<PEP 440 version>")
        if not re.fullmatch(r"[0-9a-f]{12}", str(r.get("commit", ""))):
            out.append(f"{where}: commit is not 12 hex digits")
        cann = r.get("cann")
        if not isinstance(cann, dict) or "910b" not in cann:
            out.append(f"{where}: no CANN for the 910b image")
            continue
        for fam, ver in cann.items():
            if fam not in IMAGE_FAMILIES:
                out.append(f"{where}: family {fam!r} not in {IMAGE_FAMILIES}")
            if not (CANN_VERSION.match(str(ver)) or IMAGE_BETA.match(str(ver))):
                out.append(f"{where}: CANN {ver!r} of {fam} is not a CANN version")
        if r.get("torch_npu"):
            out += _version(where, r["torch_npu"])
    return out


# ---------------------------------------------------------------- tests

CHECKERS: Dict[str, Callable[[Dict[str, Any]], List[str]]] = {
    "cuda_only.toml": cuda_only_problems,
    "framework_support.toml": framework_support_problems,
    "prerelease_torch_npu.toml": prerelease_problems,
    "torch_npu_requirements.toml": requirements_problems,
    "vllm_ascend_images.toml": images_problems,
}


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_data_file_is_well_formed(name):
    assert CHECKERS[name](load(name)) == []


def test_every_real_wheel_check_is_consistent_with_its_own_patterns():
    # bitsandbytes ships CUDA 11, 12 and 13 libraries: every one must be claimed by a pattern
    entries = {e["id"]: e for e in load("cuda_only.toml")["entry"]}
    bnb = entries["bitsandbytes"]
    seen = bnb["checked_wheel"]["dt_needed_seen"]
    assert {"libcudart.so.11.0", "libcudart.so.12", "libcudart.so.13"} <= set(seen)
    assert all(any(re.fullmatch(p, lib) for p in bnb["recognise"]["dt_needed"]) for lib in seen if "cud" in lib)


def test_torch_cuda_pattern_allows_bundled_hashed_cudart():
    torch = {e["id"]: e for e in load("cuda_only.toml")["entry"]}["torch-cuda-build"]
    assert any(re.fullmatch(p, "libcudart-45da57e3.so.11.0") for p in torch["recognise"]["dt_needed"])


def test_vllm_ascend_310p_rows_cover_the_known_gap():
    rows = [
        r for r in load("framework_support.toml")["support"] if (r["framework"], r["chip"]) == ("vllm-ascend", "310p")
    ]

    def status(version: str) -> str:
        hit = [r["status"] for r in rows if Version(version) in SpecifierSet(r["versions"], prereleases=True)]
        assert len(hit) == 1, (version, hit)
        return hit[0]

    assert status("0.9.0") == "unsupported"
    assert status("0.9.1rc1") == "experimental"
    assert status("0.9.1") == "unsupported"  # the final release dropped what its rc had
    assert status("0.10.0rc1") == "experimental"
    assert status("0.14.0rc1") == "supported"


def _drop(path: List[Any]) -> Callable[[Dict[str, Any]], None]:
    def edit(d: Dict[str, Any]) -> None:
        target = d
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return edit


def _set(path: List[Any], value: Any) -> Callable[[Dict[str, Any]], None]:
    def edit(d: Dict[str, Any]) -> None:
        target = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


BROKEN = [
    ("cuda_only.toml", "entry without sources", _set(["entry", 0, "sources"], []), "no sources"),
    ("cuda_only.toml", "name pattern that does not compile", _set(["entry", 0, "names"], ["nvidia-(cu"]), "compile"),
    (
        "cuda_only.toml",
        "example not matched by the names",
        _set(["entry", 1, "examples"], ["torch"]),
        "matches no name",
    ),
    (
        "cuda_only.toml",
        "dt_needed pattern that does not compile",
        _set(["entry", 5, "recognise", "dt_needed"], ["[x"]),
        "compile",
    ),
    (
        "cuda_only.toml",
        "a real CUDA library no pattern claims",
        _set(["entry", 5, "recognise", "dt_needed"], [r"libcudart\.so\.12"]),
        "matches no dt_needed",
    ),
    ("cuda_only.toml", "wheel over the 100 MB limit", _set(["entry", 5, "checked_wheel", "size_mb"], 728.0), "size_mb"),
    ("cuda_only.toml", "unknown severity", _set(["entry", 0, "severity"], "fatal"), "severity"),
    ("cuda_only.toml", "name_enough not a boolean", _set(["entry", 0, "name_enough"], "yes"), "name_enough"),
    ("cuda_only.toml", "missing why", _drop(["entry", 2, "why"]), "missing why"),
    ("framework_support.toml", "chip outside the vocabulary", _set(["support", 0, "chip"], "910c"), "not in"),
    ("framework_support.toml", "row without sources", _drop(["support", 3, "sources"]), "missing sources"),
    ("framework_support.toml", "bad specifier", _set(["support", 0, "versions"], "=>0.7.1rc1"), "specifier"),
    ("framework_support.toml", "overlapping rows", _set(["support", 4, "versions"], ">=0.9.0"), "all claim"),
    (
        "framework_support.toml",
        "first_version outside versions",
        _set(["support", 4, "first_version"], "0.8.0"),
        "outside",
    ),
    (
        "framework_support.toml",
        "vocabulary changed in the file",
        _set(["chip_families"], ["910b", "A3"]),
        "fixed vocab",
    ),
    ("framework_support.toml", "build_info without sources", _set(["build_info", 0, "sources"], []), "no sources"),
    ("prerelease_torch_npu.toml", "final version listed", _set(["build", 0, "version"], "2.1.0"), "not a pre-release"),
    (
        "prerelease_torch_npu.toml",
        "CANN not in its row",
        _set(["build", 3, "cann_named"], "8.0.RC2.alpha001"),
        "not in its",
    ),
    ("prerelease_torch_npu.toml", "alpha flag wrong", _set(["build", 3, "cann_named_prerelease"], False), "disagrees"),
    ("prerelease_torch_npu.toml", "base line wrong", _set(["build", 3, "base_line"], "2.4.1"), "base_line"),
    ("prerelease_torch_npu.toml", "no sources", _set(["build", 3, "sources"], []), "no sources"),
    ("torch_npu_requirements.toml", "row without sources", _drop(["row", 2, "sources"]), "no sources"),
    ("torch_npu_requirements.toml", "row without date", _drop(["row", 2, "checked_on"]), "checked_on"),
    ("torch_npu_requirements.toml", "bad specifier", _set(["row", 0, "versions"], ["=>0.7.1"]), "specifier"),
    ("torch_npu_requirements.toml", "bad CANN", _set(["row", 0, "cann_min"], "8.0"), "not a CANN"),
    (
        "torch_npu_requirements.toml",
        "empty row",
        _set(
            ["row", 0],
            {"project": "vllm-ascend", "versions": ["==0.7.1rc1"], "sources": ["x"], "checked_on": "2026-12-06"},
        ),
        "says nothing",
    ),
    ("torch_npu_requirements.toml", "torch not X.Y.Z", _set(["row", -1, "torch"], ["2.7"]), "X.Y.Z"),
    (
        "torch_npu_requirements.toml",
        "extension line per torch outside the torch list",
        lambda d: next(r for r in d["row"] if r.get("ext_by_torch")).update(ext_by_torch={"2.7.1": "7.3.0"}),
        "its torch list lacks",
    ),
    (
        "torch_npu_requirements.toml",
        "bad torch_npu spec",
        _set(["row", -1, "torch_npu_spec"], "=>2.3.1"),
        "torch_npu_spec",
    ),
    ("torch_npu_requirements.toml", "no project table", _drop(["project", "lmdeploy"]), "no [project.lmdeploy]"),
    ("torch_npu_requirements.toml", "bad install kind", _set(["project", "mindspeed", "install"], "git"), "install"),
    ("torch_npu_requirements.toml", "framework left out", _set(["unstated"], []), "neither rows nor"),
    ("vllm_ascend_images.toml", "CANN misspelt", _set(["release", 0, "cann", "910b"], "8.0"), "not a CANN"),
    ("vllm_ascend_images.toml", "unknown family", _set(["variant", 2, "family"], "a3"), "not in"),
    ("vllm_ascend_images.toml", "short commit", _set(["release", 3, "commit"], "abc"), "12 hex"),
    ("vllm_ascend_images.toml", "duplicate tag", _set(["release", 1, "tag"], "v0.7.1rc1"), "duplicate release"),
]


@pytest.mark.parametrize("name, what, edit, expect", BROKEN, ids=[b[1] for b in BROKEN])
def test_checker_reports_a_broken_copy(name, what, edit, expect):
    data = copy.deepcopy(load(name))
    edit(data)
    problems = CHECKERS[name](data)
    assert any(expect in p for p in problems), problems


def test_requirement_rows_load_as_the_rules_read_them():
    from npudoctor.knowledge.frameworks import rows_for, table

    assert len(table()) == len(load("torch_npu_requirements.toml")["row"])
    assert all(row.sources and row.checked_on for row in table())
    # an exact release row wins over the range that holds it
    (row,) = rows_for("vllm-ascend", "0.8.4rc2.dev4+g5442b46")
    assert (row.torch_npu, row.cann_min) == ("2.5.1", "8.0.0")
    (mindie,) = rows_for("mindie", "2.1.RC1.B010")
    assert (mindie.torch_npu, mindie.ext, mindie.cann_min) == (None, "7.1.0", "8.2.RC1")


@pytest.mark.parametrize(
    "release, torch_npu, cann",
    [
        # the per-release rows of vllm-ascend's versioning policy: release candidates carry
        # their own builds, not those of the final release they precede
        ("0.9.1rc1", "2.5.1.post1.dev20250528", "8.1.RC1"),
        ("0.9.1rc3", "2.5.1.post1", "8.2.RC1"),
        ("0.9.1", "2.5.1.post1", "8.2.RC1"),
        ("0.9.2rc1", "2.5.1.post1.dev20250619", "8.1.RC1"),
        ("0.11.0rc0", "2.7.1.dev20250724", "8.2.RC1"),
        ("0.11.0rc1", "2.7.1", "8.3.RC1"),
        ("0.11.0rc2", "2.7.1", "8.3.RC2"),
        ("0.11.0rc3", "2.7.1.post1", "8.3.RC2"),
        ("0.11.0", "2.7.1.post1", "8.3.RC2"),
        ("0.12.0rc1", "2.8.0", "8.3.RC2"),
        ("0.8.5rc1", "2.5.1", "8.1.RC1"),
    ],
)
def test_vllm_ascend_release_candidates_have_their_own_rows(release, torch_npu, cann):
    from npudoctor.knowledge.frameworks import rows_for

    (row,) = rows_for("vllm-ascend", release)
    assert (row.torch_npu, row.cann_min) == (torch_npu, cann)
