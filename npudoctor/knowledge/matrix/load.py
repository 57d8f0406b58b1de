"""Loading the compatibility matrix: files, merge, validation, the user cache and the
per-process memo (:func:`load_matrix`)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import msgspec

from npudoctor.digest import sha256_hex
from npudoctor.host import read_capped
from npudoctor.knowledge.matrix.model import SCHEMA_VERSION, MatrixError, _valid_date
from npudoctor.knowledge.matrix.queries import Matrix
from npudoctor.knowledge.matrix.schema import validate
from npudoctor.knowledge.matrix_stamp import bundled_dir as bundled_dir  # re-exported: the loader's locations
from npudoctor.knowledge.matrix_stamp import cache_dir as cache_dir
from npudoctor.knowledge.matrix_stamp import cache_path as cache_path
from npudoctor.parsers import jsontext

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Optional, Tuple


# ------------------------------------------------------------------ loading
def _read_raw(file: str) -> bytes:
    """The bytes of one matrix file, read through :func:`npudoctor.host.read_capped` (no
    FIFO, at most 32 MiB).  Raises :class:`MatrixError`."""
    limit = 32 * 1024 * 1024
    try:
        raw, over = read_capped(file, limit)
    except OSError as exc:
        raise MatrixError(f"cannot read matrix file {file}: {exc.strerror or exc}") from None
    if over:
        raise MatrixError(f"matrix file {file} is larger than 32 MiB")
    return raw


def _parse_doc(file: str, raw: bytes) -> Dict[str, Any]:
    """Parse one matrix file's bytes, TOML or JSON told apart by content: a document
    starting with ``{`` (which no TOML document can) is tried as JSON first, as is a
    ``*.json`` file, the rest as TOML first; when that fails the other format is tried, and
    the first error is the one reported (the refreshed cache copy and its ``.prev`` are JSON
    whatever their names).  Raises :class:`MatrixError` naming the file."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError(f"matrix file {file} is not UTF-8 text: {exc}") from None
    head = text.lstrip("\ufeff \t\r\n")
    json_first = head.startswith("{") or (file.endswith(".json") and not head.startswith(("[", "#")))
    order = (_json_doc, _toml_doc) if json_first else (_toml_doc, _json_doc)
    try:
        return order[0](file, text)
    except MatrixError as first:
        try:
            return order[1](file, text)
        except MatrixError:
            raise first from None


def _json_doc(file: str, text: str) -> Dict[str, Any]:
    try:
        doc = jsontext.loads(text)
    except ValueError as exc:
        raise MatrixError(f"matrix file {file} is not valid JSON (truncated?): {_short(exc)}") from None
    if not isinstance(doc, dict):
        raise MatrixError(f"matrix file {file} does not hold a matrix document")
    return doc


def _toml_doc(file: str, text: str) -> Dict[str, Any]:
    from npudoctor import tomlread as _toml

    try:
        return _toml.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MatrixError(f"matrix file {file} is not valid TOML: {_short(exc)}") from None


def _short(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)[:300]


def _read_doc(file: str) -> Tuple[Dict[str, Any], bytes]:
    """Read and parse one matrix file (see :func:`_parse_doc`).  Raises :class:`MatrixError`."""
    raw = _read_raw(file)
    return _parse_doc(file, raw), raw


#: The bundled matrix merged and validated at build time by ``scripts/gen_matrix.py
#: --write``: one JSON document ``{"sha256", "files", "data"}`` (the SHA-256 and names of the
#: TOML files it was made from, and their merged data), loaded whole by :func:`load_bundled`.
#: Run time never reads the TOML files of the bundled matrix: in a checkout
#: ``tests/test_matrix_compiled.py`` fails while the file is stale.
COMPILED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compiled.json")


def compile_documents(files: List[str], raws: List[bytes]) -> Dict[str, Any]:
    """The compiled form of the matrix files ``files`` (their bytes ``raws``): the merged
    data and the digest of the bytes, ``{"sha256", "files", "data"}``, which
    :func:`render_compiled` writes as :data:`COMPILED_FILE`.  Raises
    :class:`MatrixError` when the files do not validate (nothing invalid is compiled)."""
    digest = sha256_hex(b"".join(raws))
    data = merge_documents((f, _parse_doc(f, raw)) for f, raw in zip(files, raws))
    problems = _problems(data, "matrix/*.toml", partial=False)
    if problems:
        raise MatrixError("invalid matrix: " + "; ".join(problems[:5]))
    return {"sha256": digest, "files": [os.path.basename(f) for f in files], "data": data}


def render_compiled(doc: Dict[str, Any]) -> str:
    """The text of :data:`COMPILED_FILE` for a :func:`compile_documents` result
    (deterministic: keys sorted, compact, one line)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def load_bundled() -> Matrix:
    """The bundled matrix (origin "bundled"), from :data:`COMPILED_FILE` decoded whole.
    Raises :class:`MatrixError` when that file is missing or is not a compiled matrix of
    this schema version (a broken installation, or a checkout that never ran
    ``scripts/gen_matrix.py --write``)."""
    where = f"the compiled bundled matrix {COMPILED_FILE}"
    try:
        doc = msgspec.json.decode(_read_raw(COMPILED_FILE))
    except (MatrixError, ValueError, RecursionError) as exc:  # msgspec.DecodeError is a ValueError
        raise MatrixError(f"{where} cannot be used ({_short(exc)}): reinstall npudoctor") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("schema_version") != SCHEMA_VERSION
        or not isinstance(data.get("metas"), list)
        or not isinstance(doc.get("sha256"), str)
        or not isinstance(doc.get("files"), list)
    ):
        raise MatrixError(f"{where} is not a compiled matrix of schema version {SCHEMA_VERSION}: reinstall npudoctor")
    # schema_version first, the tables after it in name order (as the TOML parse merges them)
    merged: Dict[str, Any] = {"schema_version": data["schema_version"]}
    merged.update((k, v) for k, v in data.items() if k != "schema_version")
    return _with_provenance(Matrix(merged, {}), bundled_dir(), "bundled", doc["sha256"], doc["files"])


def merge_documents(docs: Iterable[Tuple[str, Dict[str, Any]]]) -> Dict[str, Any]:
    """Merge parsed matrix files: arrays of tables are concatenated, ``[meta]`` tables
    are collected into ``metas`` (one per file), ``schema_version`` must agree.
    Raises :class:`MatrixError`."""
    data: Dict[str, Any] = {"schema_version": SCHEMA_VERSION, "metas": []}
    for name, doc in docs:
        sv = doc.get("schema_version")
        if sv != SCHEMA_VERSION:
            raise MatrixError(f"matrix file {name}: schema_version is {sv!r}, expected {SCHEMA_VERSION}")
        for key, value in doc.items():
            if key == "schema_version":
                continue
            if key == "meta":
                if not isinstance(value, dict):
                    raise MatrixError(f"matrix file {name}: [meta] must be a table")
                data["metas"].append(dict(value, file=os.path.basename(name)))
            elif key == "metas":
                if not isinstance(value, list):
                    raise MatrixError(f"matrix file {name}: metas must be an array of tables")
                data["metas"].extend(value)
            elif isinstance(value, list):
                data.setdefault(key, []).extend(value)
            else:
                raise MatrixError(f"matrix file {name}: unexpected top-level key '{key}'")
    return data


def _files_of(target: str) -> List[str]:
    if os.path.isdir(target):
        try:
            names = sorted(f for f in os.listdir(target) if f.endswith((".toml", ".json")))
        except OSError as exc:
            raise MatrixError(f"cannot list matrix directory {target}: {exc.strerror or exc}") from None
        if not names:
            raise MatrixError(f"matrix directory {target} holds no .toml file")
        return [os.path.join(target, f) for f in names]
    if not os.path.exists(target):
        raise MatrixError(f"matrix file {target} does not exist")
    return [target]


def _problems(data: Dict[str, Any], where: str, partial: bool) -> List[str]:
    """Schema problems of merged matrix ``data`` and of its files' ``[meta] retrieved``."""
    problems = validate(data, where=where, partial=partial)
    for meta in data["metas"]:
        ret = meta.get("retrieved")
        if not (isinstance(ret, str) and _valid_date(ret)):
            problems.append(f"{meta.get('file', where)}: [meta] field 'retrieved' must be a date YYYY-MM-DD")
    return problems


def _validated(target: str, files: List[str], raws: List[bytes], partial: bool) -> Dict[str, Any]:
    """The merged data of matrix files ``files`` (bytes ``raws``) of ``target``, parsed and
    validated.  Raises :class:`MatrixError` naming the file, row and field of the first problems."""
    data = merge_documents((f, _parse_doc(f, raw)) for f, raw in zip(files, raws))
    where = target if len(files) == 1 else f"{target}/*.toml"
    problems = _problems(data, os.path.basename(where) if len(files) == 1 else where, partial)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise MatrixError("invalid matrix: " + "; ".join(problems[:5]) + more)
    return data


def load_from(target: str, origin: str, partial: bool = False) -> Matrix:
    """Load, merge and validate the matrix files at ``target`` (a file or a directory of
    them; ``origin``: "file", "cache", or "bundled" for the bundled TOML files themselves, as
    ``matrix verify`` checks them); ``partial`` accepts a part of the matrix (see
    :func:`validate`).  The bundled matrix in use is :func:`load_bundled`.
    Raises :class:`MatrixError` naming the file, row and field of the first problems."""
    files = _files_of(target)
    raws = [_read_raw(f) for f in files]
    digest = sha256_hex(b"".join(raws))
    matrix = Matrix(_validated(target, files, raws, partial), {})
    return _with_provenance(matrix, target, origin, digest, [os.path.basename(f) for f in files])


def _with_provenance(matrix: Matrix, source: str, origin: str, digest: str, files: List[str]) -> Matrix:
    """``matrix`` with its provenance filled in: ``source``, ``origin``, the newest
    ``[meta] retrieved`` date, the ``sha256`` of the files, their names, every source cited,
    and the last refresh (when a refreshed copy says so)."""
    prov = matrix.provenance
    metas = matrix.table("metas")
    dates = [m["retrieved"] for m in metas if isinstance(m.get("retrieved"), str)]
    sources: List[str] = []
    for m in metas:
        for s in m.get("sources", []) or []:
            if isinstance(s, str) and s not in sources:
                sources.append(s)
    prov.update(
        source=source,
        origin=origin,
        retrieved=max(dates) if dates else None,
        sha256=digest,
        files=list(files),
        sources=sources,
    )
    refreshed = [m for m in metas if m.get("refreshed")]
    if refreshed:
        prov["refreshed"] = refreshed[-1]["refreshed"]
        prov["refreshed_from"] = list(refreshed[-1].get("refreshed_from", []))
    return matrix


_LOADED: Dict[Any, Matrix] = {}


def _stat_key(path: str) -> Any:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def load_matrix(path: Optional[str] = None) -> Matrix:
    """:func:`load_uncached`, memoised per process: the devices probe and the rules of
    one run share one parse.  A changed file (refresh, edit) is loaded anew: the key
    holds the path and the size and mtime of the file or cache copy it reads."""
    key = (path, _stat_key(path) if path else _stat_key(cache_path()))
    found = _LOADED.get(key)
    if found is None:
        found = _LOADED[key] = load_uncached(path)
    return found


def load_uncached(path: Optional[str] = None) -> Matrix:
    """The matrix in use.  ``path`` (a .toml/.json file or a directory of them) if
    given (origin "file"); else the refreshed copy in the user cache when it validates
    and is not older than the bundled matrix (origin "cache"); else the bundled matrix
    (origin "bundled").  A broken cache copy is skipped (its problem is recorded in
    ``provenance["cache_error"]``).  Raises :class:`MatrixError`."""
    if path:
        return load_from(path, "file")
    cached_file = cache_path()
    cache_error = cache_note = None
    bundled = load_bundled()
    if os.path.exists(cached_file):
        try:
            cached = load_from(cached_file, "cache")
        except MatrixError as exc:
            cache_error = str(exc)
        else:
            if (cached.provenance.get("retrieved") or "") >= (bundled.provenance.get("retrieved") or ""):
                return cached
            cache_note = f"cached matrix {cached_file} is older than the bundled one; not used"
    if cache_error:
        bundled.provenance["cache_error"] = cache_error
    if cache_note:
        bundled.provenance["cache_note"] = cache_note
    return bundled
