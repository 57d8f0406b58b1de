"""The snapshot: every fact npudoctor gathered about one machine, as plain data.

A snapshot is what ``npudoctor collect`` writes, ``check --from`` replays, ``compare``
diffs across nodes and ``plan`` reads on the connected side.  ``facts`` maps a section
name (``host``, ``python``, ``packages``, ``cann``, ``driver``, ``environment``,
``libraries``, ``devices``, ``container``, ``hccl``, ``deep``) to the JSON-able dict
that the probe of that name produced; each section documents its keys in its probe
module and has a typed view in :mod:`npudoctor.facts` (the JSON Schema
``docs/schema/snapshot.schema.json`` is generated from those views).  Records carry the ``source`` they were read from (a file path or a command).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from typing import TYPE_CHECKING

from npudoctor import __version__
from npudoctor.host import read_capped
from npudoctor.parsers import jsontext
from npudoctor.record import MutableRecord, field

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from npudoctor.redact import Redactor

#: Version of the snapshot/JSON layout.  Bump on incompatible change; readers accept
#: the versions listed in :data:`READABLE_SCHEMAS`.
SCHEMA_VERSION = 1
READABLE_SCHEMAS = (1,)
#: Largest snapshot file read (bytes): a node's snapshot is a few megabytes; a file over
#: this size is refused from its size, before any of it is read.
SNAPSHOT_LIMIT = 64 << 20
#: Most memory the text of a snapshot may take once decoded (bytes): the same bound as the
#: file's size, so that a file of ASCII text holding one character past U+FFFF (four bytes
#: for every character of the decoded text) cannot grow fourfold.
SNAPSHOT_MEMORY = SNAPSHOT_LIMIT
#: Most JSON values a snapshot may hold (objects, arrays and members): a real one holds tens
#: of thousands; the bound keeps parsing a hostile file of tiny objects within memory.
SNAPSHOT_VALUES = 2_000_000
#: Deepest nesting of objects and arrays a snapshot may hold: a real one nests about six
#: levels (the facts of a section, a record, its fields); redaction and the typed views
#: walk what is parsed, so a hostile depth is refused before parsing.
SNAPSHOT_DEPTH = 64


def too_wide(memory: int) -> str:
    """Why a snapshot whose text takes ``memory`` bytes (over :data:`SNAPSHOT_MEMORY`) is
    not read."""
    return (
        f"would take {memory >> 20} MB in memory as text (more than {SNAPSHOT_MEMORY >> 20} MB:"
        " a character past U+00FF widens every character of the text to 2 or 4 bytes); not read"
    )


class SnapshotError(ValueError):
    """A snapshot file could not be read: not JSON, wrong schema, missing keys."""


class Snapshot(MutableRecord):
    """Facts about one machine plus where and when they were gathered.

    ``target`` says what was looked at: ``{"mode": "live"|"root"|"from", "root": str,
    "python": str|None, "user": str|None}``.  ``node`` is the node label used by
    ``compare`` (the host name, or a stable pseudonym once redacted).  ``matrix`` is the
    provenance of the matrix in use (``source``, ``retrieved``, ``sha256``, ``origin``).
    """

    facts: Dict[str, Any] = field(default_factory=dict)
    target: Dict[str, Any] = field(default_factory=dict)
    node: str = ""
    created: str = ""
    matrix: Dict[str, Any] = field(default_factory=dict)
    redacted: bool = False
    npudoctor_version: str = __version__
    schema_version: int = SCHEMA_VERSION

    def section(self, name: str) -> Dict[str, Any]:
        """The facts of one section (an empty dict when the probe did not run)."""
        value = self.facts.get(name)
        return value if isinstance(value, dict) else {}

    def to_dict(self) -> Dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "npudoctor_version": self.npudoctor_version,
            "created": self.created,
            "node": self.node,
            "redacted": self.redacted,
            "target": self.target,
            "matrix": self.matrix,
            "facts": self.facts,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> Snapshot:
        """Build from parsed JSON; raises :class:`SnapshotError` when malformed.

        Also accepts a full ``check --json`` report (it embeds the same keys).
        """
        if not isinstance(raw, dict):
            raise SnapshotError("not a snapshot: the top level is not a JSON object")
        version = raw.get("schema_version")
        if version not in READABLE_SCHEMAS:
            raise SnapshotError(
                f"unsupported snapshot schema_version {version!r} (this npudoctor reads {READABLE_SCHEMAS})"
            )
        facts = raw.get("facts")
        if not isinstance(facts, dict):
            raise SnapshotError("not a snapshot: no 'facts' object")
        if not facts:
            raise SnapshotError("empty snapshot: 'facts' holds no section (was it written by `npudoctor collect`?)")
        # A section that is not an object is not a reason to refuse the rest: the typed views
        # (npudoctor.facts) read it as "malformed" and HOST005 says it could not be read
        # (a malformed section is a "could not read" fact, not a refusal).
        return cls(
            facts=facts,
            target=dict(raw.get("target") or {}),
            node=str(raw.get("node") or ""),
            created=str(raw.get("created") or ""),
            matrix=dict(raw.get("matrix") or {}),
            redacted=bool(raw.get("redacted", False)),
            npudoctor_version=str(raw.get("npudoctor_version") or "(unknown version)"),
            schema_version=int(version),
        )

    @classmethod
    def load(cls, path: str) -> Snapshot:
        """Read a snapshot file (``-`` is not accepted here); :class:`SnapshotError` on
        any problem, with the file named."""
        try:
            data, truncated = read_capped(path, SNAPSHOT_LIMIT, pipes=True, whole=True)
        except OSError as exc:
            raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror or exc}") from None
        if truncated:
            raise SnapshotError(f"snapshot {path} is over {SNAPSHOT_LIMIT >> 20} MB")
        memory = jsontext.text_memory(data)
        if memory > SNAPSHOT_MEMORY:
            raise SnapshotError(f"snapshot {path} {too_wide(memory)}")
        text = data.decode("utf-8", errors="replace")
        del data  # the bytes are not needed while the text is parsed
        try:
            raw = jsontext.loads(text, max_values=SNAPSHOT_VALUES, max_depth=SNAPSHOT_DEPTH)
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
            why = jsontext.describe(exc, text) if isinstance(exc, ValueError) else "nested too deeply"
            raise SnapshotError(f"snapshot {path} is not valid JSON: {why}") from None
        del text  # nor the text while the parsed facts are read
        try:
            return cls.from_dict(raw)
        except SnapshotError as exc:
            raise SnapshotError(f"{path}: {exc}") from None

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The snapshot as JSON text, UTF-8 encodable whatever bytes its paths and variables
        hold (:func:`npudoctor.parsers.jsontext.utf8`)."""
        return jsontext.utf8(json.dumps(self.to_dict(), indent=indent, sort_keys=False, ensure_ascii=False))


def now_iso() -> str:
    """Current UTC time as ISO 8601 with a ``Z`` suffix, seconds precision."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


#: Temporary files of :func:`atomic_write`: ``.npudoctor-<pid>-<random>.tmp``.
_TMP_PREFIX = ".npudoctor-"
_TMP_SUFFIX = ".tmp"
#: A temporary file older than this (seconds) is stale even if its writer's pid is alive
#: (the pid may have been reused, or belong to another machine sharing the directory).
STALE_AFTER = 3600.0


def _writer_gone(name: str, age: float) -> bool:
    middle = name[len(_TMP_PREFIX) : -len(_TMP_SUFFIX)]
    pid_text = middle.split("-", 1)[0]
    if age > STALE_AFTER:
        return True
    if not (pid_text.isascii() and pid_text.isdecimal() and len(pid_text) <= 9 and "-" in middle):
        return False  # an older name without the pid: left until it is an hour old
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def clean_stale_temp(directory: str) -> List[str]:
    """Remove the temporary files that writers killed mid-write (``kill -9``) left in
    ``directory``: regular files of this uid named ``.npudoctor-<pid>-*.tmp`` whose process is
    gone, or older than :data:`STALE_AFTER`.  Symlinks are never followed; returns the names
    removed; never raises."""
    removed: List[str] = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(_TMP_PREFIX) and n.endswith(_TMP_SUFFIX)]
    except OSError:
        return removed
    now = time.time()
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                continue
            if _writer_gone(name, now - st.st_mtime):
                os.unlink(path)
                removed.append(name)
        except OSError:
            continue
    return removed


def atomic_write(path: str, data: str, named: bool = False) -> None:
    """Write ``data`` (UTF-8) to ``path`` without ever changing what kind of file it is.

    A file npudoctor picks itself (a cache in a shared directory) is replaced atomically:
    temp file in the same directory, fsync, rename -- whatever was put in its place (a
    symlink, a FIFO) is replaced, never followed; the previous file stays intact if
    anything fails.  An output the user ``named`` on the command line (``collect -o``) keeps
    its kind: a regular file is replaced the same way, a symlink is kept and its target
    written, a character device (``/dev/null``, a terminal) or a FIFO is written in place as
    a shell redirection would, and any other existing target is refused with ``OSError``.
    Raises ``OSError`` (e.g. read-only directory) with nothing left behind.  Stale temporary
    files of writers killed before (:func:`clean_stale_temp`) are removed first."""
    import tempfile  # here, not at import: health imports this module on every run, writes rarely

    target = path
    if named:
        target = os.path.realpath(path) if os.path.islink(path) else path
        try:
            mode = os.stat(target).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
                _write_in_place(target, data)
                return
            raise OSError(errno.EINVAL, "exists and is not a regular file", path)
    directory = os.path.dirname(os.path.abspath(target)) or "."
    clean_stale_temp(directory)
    fd, tmp = tempfile.mkstemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-", suffix=_TMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_in_place(path: str, data: str) -> None:
    """Write ``data`` into an existing FIFO or character device (no create, no rename)."""
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(data)


# ---------------------------------------------------------------- redaction
def pseudonym(text: str) -> str:
    """A stable, non-reversible label for a host name: ``node-<8 hex>`` (no site salt;
    see :func:`npudoctor.redact.pseudonym`)."""
    from npudoctor.redact import pseudonym

    return pseudonym(text, "node")


def redactor_for(snapshot: Snapshot, salt: Optional[str] = None) -> Redactor:
    """The :class:`npudoctor.redact.Redactor` of ``snapshot``: knowing the host and user
    names its facts mention and its node label (unless already redacted); ``salt`` as in
    :func:`redact`."""
    from npudoctor.redact import Redactor

    return Redactor.for_facts(snapshot.facts, "" if snapshot.redacted else snapshot.node, salt)


def redact(snapshot: Snapshot, salt: Optional[str] = None, redactor: Optional[Redactor] = None) -> Snapshot:
    """A copy of ``snapshot`` without secrets or personal data, for sharing
    (:class:`npudoctor.redact.Redactor`).

    Host names (the node label, ``hostname`` keys, ``MASTER_ADDR``…) and user names (the
    judged account, ``USER``, ``/home/<u>`` and the like) become stable pseudonyms, IPv4 and
    IPv6 addresses stable pseudonymous addresses (same ``/24``, same last octet), and
    secrets -- URL credentials, tokens, values of secret-named keys -- ``<redacted>``.
    ``salt``: the site salt (default ``NPUDOCTOR_REDACT_SALT``); the node label of an
    unsalted redaction is :func:`pseudonym` of the host name.  ``redactor``: the one
    :func:`redactor_for` gave for this snapshot (and ``salt``), when the caller redacts more
    text with it (``check --markdown``: one walk of the facts, one memo of redacted texts).
    """
    if redactor is None:
        redactor = redactor_for(snapshot, salt)
    facts = redactor.value(snapshot.facts)
    target = redactor.value(snapshot.target)
    node = snapshot.node if snapshot.redacted else (redactor.host(snapshot.node) if snapshot.node else "")
    return Snapshot(
        facts=facts,
        target=target,
        node=node,
        created=snapshot.created,
        matrix=dict(snapshot.matrix),
        redacted=True,
        npudoctor_version=snapshot.npudoctor_version,
        schema_version=snapshot.schema_version,
    )
