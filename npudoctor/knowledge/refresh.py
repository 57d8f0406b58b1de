"""``npudoctor matrix refresh``: fetch the official tables, merge, validate, write the cache.

Sources (default: :data:`DEFAULT_SOURCES`; ``--source URL|FILE`` replaces them):

* the Ascend/pytorch ``COMPATIBILITY.en.md`` (or ``.md``) mapping table, or an older
  release-branch README ("Ascend Auxiliary Software" table) — parsed by
  :func:`npudoctor.parsers.official.parse_markdown`;
* the TorchNPU release notes (``docs/zh/release_notes.md``): the mapping table (package,
  product version = ``ext_version``) and "版本兼容性说明", the CANN each extension line is
  declared compatible with — same parser, ``MarkdownResult.declared``;
* the CANN release notes (``cann/release-management`` ``<version>/release-notes.md``) of the
  newest CANN releases the base matrix knows: CANN ↔ Ascend HDK pairing, lists and Y/N grid
  — :func:`npudoctor.parsers.release_notes.parse_cann_notes`;
* the PyPI JSON API of ``torch-npu`` — :func:`npudoctor.parsers.official.parse_pypi_json`
  (the only source of the per-platform Python versions).

Each default source is a tuple of mirrors tried in order (GitHub raw, then gitcode raw).
Fetching uses ``requests`` with a connect/read timeout and a size cap; only ``https://`` is
accepted for remote URLs (``http://`` only for loopback hosts, e.g. a local mirror or the
tests), and a plain path or ``file://`` URL reads a local file (air-gapped use).  Each
source is fetched and parsed on its own: a failing source is reported and the others still
refresh.  The merge starts from the matrix in use and only adds (a merge that would drop a
known row or declared entry is refused); rows it adds inherit their line's declared CANN
(:mod:`npudoctor.knowledge.refresh_merge`).  The result is
validated with the same schema check as the loader, then written atomically (temp file,
fsync, rename) to ``<cache>/matrix.json``, the previous copy kept as ``matrix.json.prev``.
Nothing is written when the result does not validate, so the matrix in use stays valid.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import ipaddress
import os
import shutil
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple, Union
from urllib.parse import unquote, urlparse

from npudoctor.host import read_capped
from npudoctor.knowledge.matrix import (
    CACHE_FILE,
    MatrixError,
    cache_dir,
    load_from,
    load_uncached,
    merge_documents,
    validate,
)
from npudoctor.knowledge.versions import pep440_public
from npudoctor.record import MutableRecord, Record, field

if TYPE_CHECKING:
    from npudoctor.parsers.official import MarkdownResult

#: Where the official documents live.  Each source is a tuple of mirror URLs tried in order
#: until one answers: the GitHub mirror first, then gitcode (where Ascend/pytorch and
#: cann/release-management are developed; raw.githubusercontent.com is often unreachable
#: from mainland-China hosts).  The CANN release notes are added per CANN release the base
#: matrix knows (see :func:`cann_note_sources`).
DEFAULT_SOURCES: Tuple[Tuple[str, ...], ...] = (
    (
        "https://raw.githubusercontent.com/Ascend/pytorch/master/COMPATIBILITY.en.md",
        "https://raw.gitcode.com/Ascend/pytorch/raw/master/COMPATIBILITY.en.md",
    ),
    (
        "https://raw.githubusercontent.com/Ascend/pytorch/master/docs/zh/release_notes.md",
        "https://raw.gitcode.com/Ascend/pytorch/raw/master/docs/zh/release_notes.md",
    ),
    ("https://pypi.org/pypi/torch-npu/json",),
)
#: Mirrors of one CANN release note (``{version}`` is the CANN release, e.g. ``9.1.1``).
CANN_NOTES_MIRRORS = (
    "https://raw.githubusercontent.com/hicann/release-management/master/{version}/release-notes.md",
    "https://raw.gitcode.com/cann/release-management/raw/master/{version}/release-notes.md",
)
#: How many of the newest final CANN releases of the base matrix get their notes read.
CANN_NOTES_NEWEST = 2
#: Largest document accepted (bytes); the PyPI JSON of torch-npu is ~1 MB untrimmed.
MAX_BYTES = 8 * 1024 * 1024
#: (connect, read) timeout in seconds of one request.
TIMEOUT = (5.0, 20.0)
#: Fewest mapping rows a COMPATIBILITY/README table must yield to be believed.
MIN_ROWS = 5

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class SourceError(Exception):
    """One source could not be fetched or parsed (message says which and why)."""


class SourceReport(MutableRecord):
    """Outcome of one source: ``ok``, ``kind`` (markdown/pypi), ``summary`` or ``error``."""

    source: str
    ok: bool
    kind: str = ""
    #: mirrors tried before ``source`` answered, each ``"URL: error"``
    tried: List[str] = field(default_factory=list)
    summary: str = ""
    error: str = ""
    warnings: List[str] = field(default_factory=list)
    sha256: str = ""


class RefreshResult(MutableRecord):
    """What a refresh did.  ``written`` is the cache file (None for dry runs or when
    nothing was written); ``changes`` lists added/changed rows; ``error`` is set when no
    new matrix was produced."""

    sources: List[SourceReport]
    changes: List[str] = field(default_factory=list)
    #: rows / declared entries the merge would have dropped (the refresh is then refused)
    dropped: List[str] = field(default_factory=list)
    written: Optional[str] = None
    previous: Optional[str] = None
    error: str = ""
    data: Optional[Dict[str, Any]] = None

    @property
    def failed(self) -> List[SourceReport]:
        return [s for s in self.sources if not s.ok]


# ---------------------------------------------------------------- fetching
def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def fetch(source: str, timeout: Tuple[float, float] = TIMEOUT, max_bytes: int = MAX_BYTES) -> str:
    """Text of ``source``: a local path, a ``file://`` URL, an ``https://`` URL, or an
    ``http://`` URL on a loopback host.  Raises :class:`SourceError` (timeout, HTTP
    status, too large, not UTF-8, scheme not allowed)."""
    parsed = urlparse(source)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        path = unquote(parsed.path) if parsed.scheme == "file" else source
        try:
            raw, _over = read_capped(path, max_bytes + 1, pipes=True)
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    elif parsed.scheme in ("https", "http"):
        host = parsed.hostname or ""
        if parsed.scheme == "http" and not _is_loopback(host):
            raise SourceError("plain http:// is refused for remote hosts; use https:// or a local file")
        raw = _http_get(source, timeout, max_bytes)
    else:
        raise SourceError(f"unsupported URL scheme {parsed.scheme!r} (use https://, a file path or file://)")
    if len(raw) > max_bytes:
        raise SourceError(f"larger than the {max_bytes // (1024 * 1024)} MiB limit")
    if not raw.strip():
        raise SourceError("empty document")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"not UTF-8 text (byte {exc.start}): a corrupt or binary download?") from None


def _http_get(url: str, timeout: Tuple[float, float], max_bytes: int) -> bytes:
    import requests

    try:
        with requests.get(
            url,
            timeout=timeout,
            stream=True,
            allow_redirects=True,
            headers={"User-Agent": "npudoctor-matrix-refresh", "Accept": "application/json, text/plain, */*"},
        ) as resp:
            if resp.url and urlparse(resp.url).scheme == "http" and not _is_loopback(urlparse(resp.url).hostname or ""):
                raise SourceError(f"redirected to plain http:// ({resp.url}); refused")
            if resp.status_code != 200:
                raise SourceError(f"HTTP {resp.status_code} {resp.reason or ''}".strip())
            declared = resp.headers.get("Content-Length")
            if declared and declared.isdecimal() and int(declared) > max_bytes:
                raise SourceError(f"document of {int(declared)} bytes exceeds the {max_bytes} byte limit")
            chunks: List[bytes] = []
            total = 0
            for chunk in resp.iter_content(65536):
                total += len(chunk)
                if total > max_bytes:
                    raise SourceError(f"document exceeds the {max_bytes} byte limit")
                chunks.append(chunk)
            return b"".join(chunks)
    except requests.exceptions.ConnectTimeout:
        raise SourceError(f"no network to {urlparse(url).hostname or url} (no answer in {timeout[0]:g}s)") from None
    except requests.exceptions.Timeout:
        raise SourceError(f"timed out (connect {timeout[0]:g}s / read {timeout[1]:g}s)") from None
    except requests.exceptions.SSLError:
        raise SourceError(f"TLS error talking to {urlparse(url).hostname or url}") from None
    except requests.exceptions.ConnectionError:
        raise SourceError(f"no network to {urlparse(url).hostname or url}") from None
    except requests.exceptions.RequestException as exc:
        raise SourceError(f"request failed: {_short(exc)}") from None


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "…"


def fetch_first(
    mirrors: Sequence[str], timeout: Tuple[float, float] = TIMEOUT, max_bytes: int = MAX_BYTES
) -> Tuple[str, str, List[str]]:
    """Fetch the first of ``mirrors`` (URLs/paths of one document) that answers with a
    usable document.  Returns ``(url that answered, text, ["URL: error" of those tried
    before])``.  Raises :class:`SourceError` naming every mirror's error when none answers.
    An HTML page (an error or login page) counts as a failure and the next mirror is tried."""
    from npudoctor.parsers.official import looks_like_html

    tried: List[str] = []
    for url in mirrors:
        try:
            text = fetch(url, timeout=timeout, max_bytes=max_bytes)
        except SourceError as exc:
            tried.append(f"{url}: {exc}")
            continue
        if looks_like_html(text) and len(mirrors) > 1:
            tried.append(f"{url}: got an HTML page instead of the document")
            continue
        return url, text, tried
    if len(tried) == 1:
        raise SourceError(tried[0].split(": ", 1)[1])
    raise SourceError("no mirror answered: " + "; ".join(tried))


def cann_note_sources(base: Dict[str, Any], newest: int = CANN_NOTES_NEWEST) -> List[Tuple[str, ...]]:
    """Mirror tuples of the release notes of the ``newest`` final CANN releases of ``base``
    (a matrix document): their grids restate the HDK window of every CANN line they cover."""
    from npudoctor.knowledge.versions import parse_cann

    finals = []
    for r in base.get("cann", []):
        v = parse_cann(str(r.get("version", "")))
        if v is not None and not v.is_prerelease and v.orderable:
            finals.append((v, str(r["version"])))
    finals.sort(key=lambda p: p[0], reverse=True)
    return [tuple(m.format(version=text) for m in CANN_NOTES_MIRRORS) for _v, text in finals[:newest]]


# ---------------------------------------------------------------- parsing one source
def parse_source(source: str, text: str) -> Tuple[str, Any, SourceReport]:
    """Parse fetched ``text``: returns ``(kind, parsed, report)``.  Raises
    :class:`SourceError` for an HTML page, a table with unknown columns, a corrupt JSON."""
    from npudoctor.parsers import official

    kind = official.classify(text)
    if kind == "html":
        raise SourceError("got an HTML page instead of the document (an error page, or a web view URL)")
    try:
        if kind == "pypi":
            parsed: Any = official.parse_pypi_json(text)
        elif kind == "cann_notes":
            from npudoctor.parsers.release_notes import parse_cann_notes

            parsed = parse_cann_notes(text)
        else:
            parsed = official.parse_markdown(text)
    except official.OfficialParseError as exc:
        raise SourceError(str(exc)) from None
    report = SourceReport(
        source=source,
        ok=True,
        kind=kind,
        summary=official.summary(parsed),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )
    if kind == "cann_notes":
        report.summary = (
            f"CANN {parsed.version} release notes: {len(parsed.paired)} paired, {len(parsed.listed)} listed, "
            f"{len(parsed.grid)} grid rows"
        )
        report.warnings = list(parsed.warnings)
    if kind == "markdown":
        report.warnings = list(parsed.warnings)
        if parsed.layout in ("compatibility", "readme") and len(parsed.rows) < MIN_ROWS:
            raise SourceError(f"only {len(parsed.rows)} mapping rows found (expected at least {MIN_ROWS})")
    return kind, parsed, report


# ---------------------------------------------------------------- merging
def _index(rows: List[Dict[str, Any]]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for i, r in enumerate(rows):
        v = pep440_public(str(r.get("torch_npu", "")))
        out[str(v) if v is not None else str(r.get("torch_npu"))] = i
    return out


def _is_range(cann: str) -> bool:
    """``9.1.X`` / ``9.1.x`` / ``9.1.*``: a CANN line, not one release."""
    parts = cann.strip().split(".")
    return len(parts) >= 2 and parts[-1] in ("X", "x", "*")


def _key(version: str) -> str:
    v = pep440_public(version)
    return str(v) if v is not None else version


class _Table(Record):
    """The ``torch_npu`` rows of the document being merged, indexed once and kept up to
    date (merging stays linear), with the changes said so far."""

    data: Dict[str, Any]
    rows: List[Dict[str, Any]]
    replace: bool
    idx: Dict[str, int] = field(default_factory=dict)
    line_ranges: Dict[str, Tuple[List[str], str]] = field(default_factory=dict)
    changes: List[str] = field(default_factory=list)

    def inherited_range(self, ext: str) -> Tuple[List[str], str]:
        """line_range of ``ext``, once per line: a row added with it leaves it unchanged."""
        from npudoctor.knowledge.refresh_merge import line_range

        if ext not in self.line_ranges:
            self.line_ranges[ext] = line_range(self.rows, ext, self.data.get("release_tag", []))
        found, src = self.line_ranges[ext]
        return list(found), src

    def upsert(self, version: str, values: Dict[str, Any], new_defaults: Dict[str, Any]) -> None:
        """Update the row of ``version`` with ``values``, or add it over ``new_defaults``."""
        k = _key(version)
        if k in self.idx:
            row = self.rows[self.idx[k]]
            if not self.replace and "cann" in values:
                values["cann"] = list(values["cann"]) + [c for c in row.get("cann") or [] if c not in values["cann"]]
            diff = [f for f, v in values.items() if row.get(f) != v and f not in ("retrieved", "source")]
            if diff:
                self.changes.append(
                    f"changed torch_npu {row['torch_npu']}: "
                    + ", ".join(f"{f} {row.get(f)!r} -> {values[f]!r}" for f in diff)
                )
            row.update(values)
        else:
            row = dict(new_defaults)
            row.update(values)
            row["torch_npu"] = version
            self.rows.append(row)
            self.idx[k] = len(self.rows) - 1
            self.changes.append(
                f"added torch_npu {version} (torch {row.get('torch')}, CANN {', '.join(row.get('cann', [])) or '?'}, "
                f"{row.get('status')})"
            )


def merge(
    base: Dict[str, Any],
    parsed: List[Tuple[str, str, Any]],
    today: str,
    warnings: Optional[Dict[str, List[str]]] = None,
    replace: bool = False,
) -> Tuple[Dict[str, Any], List[str]]:
    """Merge parsed sources into a copy of the matrix document ``base``.

    ``parsed`` holds ``(source, kind, result)``.  Mapping rows set ``torch``, ``cann``
    (the official pairing), ``branch``, ``status`` (``active``/``historical`` from the
    COMPATIBILITY.md section; README rows keep the status they have, new README rows are
    ``historical``, or ``prerelease`` for development branches), ``source`` and
    ``retrieved``; other fields (``cann_compatible``, ``python_doc``, ``eol``) are kept.
    PyPI sets ``python`` and ``platform_tags`` of every row (empty for versions without
    wheels) and adds rows (``unmapped``/``prerelease``) for versions no table lists.
    A row a refresh adds inherits its extension line's declared CANN (``cann_compatible``,
    :func:`~npudoctor.knowledge.refresh_merge.line_range`).  Release notes add their
    declared ranges to the rows of each line; CANN release notes merge into ``[[cann]]``
    (:mod:`npudoctor.knowledge.refresh_merge`).  Rows are never removed.  ``warnings``
    (source -> messages) receives what a source said that the matrix cannot hold.
    A known row's paired ``cann`` list keeps the CANN the table leaves out (curated from
    other official sources: 2.4.0.post2's 8.0.0.beta1 and 8.0.RC3.20) unless ``replace``.
    Returns ``(document, human-readable changes)``."""
    from packaging.version import Version

    from npudoctor.parsers.official import MarkdownResult

    data = copy.deepcopy(base)
    rows: List[Dict[str, Any]] = data.setdefault("torch_npu", [])
    table = _Table(data=data, rows=rows, replace=replace, idx=_index(rows))
    # COMPATIBILITY-style sources first, so that their sections win over README rows
    ordered = sorted(parsed, key=lambda p: 0 if (p[1] == "markdown" and p[2].layout == "compatibility") else 1)
    seen_in_compat: Set[str] = set()
    for source, kind, result in ordered:
        if kind == "markdown" and isinstance(result, MarkdownResult):
            _merge_mapping_rows(table, source, result, today, seen_in_compat)
            _merge_python_lines(table, result, today)
    for source, kind, result in parsed:
        if kind == "pypi":
            _merge_pypi(table, source, result, today)
    _merge_notes(table, parsed, today, warnings if warnings is not None else {})
    rows.sort(key=lambda r: pep440_public(str(r.get("torch_npu"))) or Version("0"), reverse=True)
    return data, table.changes


def _merge_mapping_rows(
    table: _Table, source: str, result: MarkdownResult, today: str, seen_in_compat: Set[str]
) -> None:
    """The rows of one mapping table (COMPATIBILITY.md or a README) into ``table``;
    ``seen_in_compat`` holds the rows a COMPATIBILITY section of this refresh set."""
    from packaging.version import Version

    from npudoctor.parsers.official import ext_version_from_branch

    for r in result.rows:
        k = _key(r.torch_npu)
        values: Dict[str, Any] = {"torch": r.torch, "source": source, "retrieved": today}
        canns = [r.cann] + [c for c in r.cann_also if c != r.cann]
        ranges = [c for c in canns if _is_range(c)]
        if ranges:
            # 'CANN 9.1.X' (COMPATIBILITY.md, TorchNPU 26.1.1): a range the release notes
            # settle, not one paired release: a declared set of the row
            idx_now = _index(table.rows)
            known = table.rows[idx_now[k]].get("cann_compatible", []) if k in idx_now else []
            values["cann_compatible"] = list(known) + [c for c in ranges if c not in known]
        if [c for c in canns if not _is_range(c)]:
            values["cann"] = [c for c in canns if not _is_range(c)]
        if r.branch:
            values["branch"] = r.branch
        ext = r.ext_version or ext_version_from_branch(r.branch)
        if r.ext_version:
            values["ext_version"] = r.ext_version
        if r.section in ("active", "historical"):
            values["status"] = r.section
            seen_in_compat.add(k)
        elif k in seen_in_compat:
            continue  # the COMPATIBILITY table of this refresh already set this row
        pre = False
        try:
            pre = Version(r.torch_npu).is_prerelease and not ext
        except Exception:
            pre = False
        inherited, inherited_src = table.inherited_range(ext)
        defaults = {
            "cann": [],
            "branch": "",
            "cann_compatible": inherited + [c for c in ranges if c not in inherited],
            "python_doc": [],
            "python": {"aarch64": [], "x86_64": []},
            "status": "prerelease" if pre else "historical",
            "ext_version": ext,
        }
        if inherited_src:
            defaults["cann_compatible_source"] = f"inherited from its extension line {ext}: {inherited_src}"
        table.upsert(r.torch_npu, values, defaults)


def _merge_python_lines(table: _Table, result: MarkdownResult, today: str) -> None:
    """The documented Python of each PyTorch line (from a COMPATIBILITY table only)."""
    for torch, pys in result.python_lines.items():
        for line in table.data.setdefault("torch_line", []):
            if pep440_public(str(line.get("torch"))) == pep440_public(torch):
                if line.get("python_doc") != pys and result.layout == "compatibility":
                    table.changes.append(
                        f"changed PyTorch {torch} documented Python: {line.get('python_doc')} -> {pys}"
                    )
                    line["python_doc"] = pys
                    line["retrieved"] = today
                break


def _merge_pypi(table: _Table, source: str, result: Dict[str, Any], today: str) -> None:
    """PyPI's Python versions and platform tags onto every row, and a row for each version
    no table lists."""
    from packaging.version import Version

    from npudoctor.knowledge.refresh_merge import row_line

    on_pypi = {_key(v): rel for v, rel in result.items()}
    for row in table.rows:
        rel = on_pypi.get(_key(str(row.get("torch_npu"))))
        py = rel.python if rel else {"aarch64": [], "x86_64": []}
        tags = rel.platform_tags if rel else {}
        if row.get("python") != py:
            table.changes.append(f"changed torch_npu {row['torch_npu']}: python {row.get('python')} -> {py}")
            row["python"] = py
        if tags:
            row["platform_tags"] = tags
        elif "platform_tags" in row:
            del row["platform_tags"]
    known = _index(table.rows)
    for version, rel in sorted(result.items(), key=lambda kv: pep440_public(kv[0]) or Version("0")):
        if _key(version) in known:
            continue
        v = pep440_public(version)
        ext = row_line({"torch_npu": version}, table.data.get("release_tag", []))
        inherited, inherited_src = table.inherited_range(ext)
        row = {
            "torch_npu": version,
            "torch": v.base_version if v is not None else version,
            "cann": [],
            "cann_compatible": inherited,
            "python_doc": [],
            "python": rel.python,
            "platform_tags": rel.platform_tags,
            "status": "prerelease" if (v is not None and v.is_prerelease) else "unmapped",
            "note": "on PyPI, in no official mapping table: CANN pairing undocumented",
            "source": source,
            "retrieved": today,
        }
        if ext:
            row["ext_version"] = ext
        if inherited_src:
            row["cann_compatible_source"] = f"inherited from its extension line {ext}: {inherited_src}"
        table.rows.append(row)
        table.changes.append(f"added torch_npu {version} from PyPI ({row['status']})")


def _merge_notes(table: _Table, parsed: List[Tuple[str, str, Any]], today: str, warnings: Dict[str, List[str]]) -> None:
    """The declared ranges of TorchNPU release notes and the CANN release notes."""
    from npudoctor.knowledge.refresh_merge import apply_cann_notes, apply_declared
    from npudoctor.parsers.official import MarkdownResult

    for source, kind, result in parsed:
        if kind == "markdown" and isinstance(result, MarkdownResult) and result.declared:
            ch, wa = apply_declared(table.data, result.declared, source, today)
        elif kind == "cann_notes":
            ch, wa = apply_cann_notes(table.data, result, source, today)
        else:
            continue
        table.changes.extend(ch)
        warnings.setdefault(source, []).extend(wa)


# ---------------------------------------------------------------- writing
def write_cache(data: Dict[str, Any], directory: str) -> Tuple[str, Optional[str]]:
    """Write ``data`` as ``<directory>/matrix.json`` atomically; the previous copy is
    kept as ``matrix.json.prev``.  Returns ``(written path, previous path or None)``.
    Raises ``OSError`` (read-only or missing directory) with nothing half-written."""
    import json

    from npudoctor.snapshot import atomic_write

    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, CACHE_FILE)
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    previous = None
    if os.path.exists(target):
        try:  # a FIFO or device planted at the cache path is not read
            old = read_capped(target, 64 << 20)[0].decode("utf-8", errors="replace")
        except OSError:
            old = None
        if old is not None:
            previous = target + ".prev"
            atomic_write(previous, old)
    atomic_write(target, text)
    return target, previous


def refresh(
    sources: Optional[Sequence[Union[str, Sequence[str]]]] = None,
    dry_run: bool = False,
    base_path: Optional[str] = None,
    directory: Optional[str] = None,
    today: Optional[_dt.date] = None,
    timeout: Tuple[float, float] = TIMEOUT,
    replace: bool = False,
) -> RefreshResult:
    """Fetch, parse and merge ``sources`` into the matrix in use (the refreshed cache when
    it is the one loaded, else the bundled matrix; or ``base_path``), so refreshes
    accumulate, validate, and (unless ``dry_run``) write the cache in ``directory`` (default:
    :func:`npudoctor.knowledge.matrix.cache_dir`).  Each source is a URL/path or a sequence
    of mirrors of one document tried in order (:func:`fetch_first`); the default is
    :data:`DEFAULT_SOURCES` plus the release notes of the newest CANN releases the base
    knows.  A merge that would drop a known row or narrow a paired or declared list is
    refused (nothing written; ``dropped`` lists them) unless ``replace`` accepts it (the
    narrowed lists are then taken from the tables; ``dropped`` still lists what went).
    When no official table (a mapping table or release notes) answered, nothing is written
    and the matrix in use keeps its date, even if PyPI answered.  Never raises for a bad
    source or an unwritable cache: see :class:`RefreshResult`."""
    day = (today or _dt.date.today()).isoformat()
    res = RefreshResult(sources=[])
    try:
        base = load_from(base_path, "file") if base_path else load_uncached()
    except MatrixError as exc:
        res.error = f"the base matrix is invalid: {exc}"
        return res
    groups: List[Tuple[str, ...]] = [
        (s,) if isinstance(s, str) else tuple(s)
        for s in (sources or list(DEFAULT_SOURCES) + cann_note_sources(base.data))
    ]
    reports = res.sources
    parsed = _fetch_and_parse(groups, timeout, reports)
    if not parsed:
        res.error = "no source could be read; the matrix in use is unchanged"
        return res
    if not any(kind in ("markdown", "cann_notes") for _s, kind, _r in parsed):
        res.error = (
            "no official table answered (only the PyPI file list); nothing written, the matrix in use keeps its date"
        )
        return res
    notes_warnings: Dict[str, List[str]] = {}
    data, changes = merge(base.data, parsed, day, notes_warnings, replace=replace)
    for rep in reports:
        rep.warnings.extend(notes_warnings.get(rep.source, []))
    data["metas"] = [m for m in data.get("metas", []) if not m.get("refreshed")]
    data["meta"] = _refreshed_meta(reports, day, base.provenance.get("sha256", ""))
    res.changes = changes
    problems = validate(_as_loaded(data), where="refreshed matrix")
    if problems:
        res.error = "the refreshed matrix does not validate (nothing written): " + "; ".join(problems[:5])
        return res
    from npudoctor.knowledge.refresh_merge import dropped

    res.dropped = dropped(base.data, data)
    if res.dropped and not replace:
        res.error = (
            f"the refresh would drop {len(res.dropped)} known row(s) or declared entries of the matrix in use "
            f"({'; '.join(res.dropped[:5])}{' …' if len(res.dropped) > 5 else ''}); refused, nothing written "
            "(--replace accepts it)"
        )
        return res
    res.data = data
    if not dry_run:
        _write_checked(res, data, directory or cache_dir())
    return res


def _fetch_and_parse(
    groups: List[Tuple[str, ...]], timeout: Tuple[float, float], reports: List[SourceReport]
) -> List[Tuple[str, str, Any]]:
    """``(source, kind, result)`` of every group of mirrors that was read and parsed; a
    report per group (failed or not) goes to ``reports``."""
    parsed: List[Tuple[str, str, Any]] = []
    for group in groups:
        try:
            src, text, tried = fetch_first(group, timeout=timeout)
        except SourceError as exc:
            reports.append(SourceReport(source=" | ".join(group), ok=False, error=str(exc)))
            continue
        try:
            kind, result, report = parse_source(src, text)
        except SourceError as exc:
            reports.append(SourceReport(source=src, ok=False, error=str(exc), tried=tried))
            continue
        report.tried = tried
        reports.append(report)
        parsed.append((src, kind, result))
    return parsed


def _refreshed_meta(reports: List[SourceReport], day: str, base_sha256: str) -> Dict[str, Any]:
    """The ``meta`` table of a refreshed matrix: where this refresh read, and what failed."""
    return {
        "name": "refreshed",
        "source": "npudoctor matrix refresh: " + ", ".join(s.source for s in reports if s.ok),
        "retrieved": day,
        "refreshed": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "refreshed_from": [s.source for s in reports if s.ok],
        "failed_sources": [s.source for s in reports if not s.ok],
        "base_sha256": base_sha256,
        "sources": [f"{s.source} (sha256 {s.sha256[:16]})" for s in reports if s.ok],
    }


def _write_checked(res: RefreshResult, data: Dict[str, Any], directory: str) -> None:
    """Write the cache in ``directory`` and load it back; on failure ``res.error`` says
    why, ``res.written`` is None and a bad file gives way to the previous copy."""
    try:
        res.written, res.previous = write_cache(_for_disk(data), directory)
    except OSError as exc:
        res.error = f"cannot write the matrix cache in {directory}: {exc.strerror or exc}"
        res.written = None
        return
    try:  # the file we wrote must load back exactly as the loader will read it
        load_from(res.written, "cache")
    except MatrixError as exc:
        if res.previous and os.path.exists(res.previous):
            shutil.copyfile(res.previous, res.written)
        res.error = f"the written matrix did not load back ({exc}); previous copy restored"
        res.written = None


def _for_disk(data: Dict[str, Any]) -> Dict[str, Any]:
    """The document as written: top-level ``schema_version``, ``meta`` (this refresh),
    ``metas`` (the provenance of the files merged), then the row tables."""
    out: Dict[str, Any] = {"schema_version": data.get("schema_version", 1), "meta": data["meta"]}
    out["metas"] = [dict(m.items()) for m in data.get("metas", [])]
    for k, v in data.items():
        if k not in ("schema_version", "meta", "metas"):
            out[k] = v
    return out


def _as_loaded(data: Dict[str, Any]) -> Dict[str, Any]:
    return merge_documents([("refreshed matrix", _for_disk(data))])
