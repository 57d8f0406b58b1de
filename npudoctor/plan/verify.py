"""``npudoctor plan verify DIR [--for site.json]``: is this bundle complete, intact and
right for this machine?

Checks, in order:

1. ``manifest.json`` is readable and well-typed (written by :mod:`npudoctor.plan.bundle`);
   a wrong-typed or too deeply nested manifest is one clear problem, never a crash;
2. every file it lists is confined to the bundle (no absolute path, no ``..``, no symlink
   out: nothing outside DIR is ever opened) and present, with the recorded size and sha256;
3. ``SHA256SUMS`` (what ``install.sh`` checks with ``sha256sum -c``) lists the same files
   with the same hashes;
4. every pin of ``requirements.txt`` has its wheel;
5. every ``.run`` package the plan needs (toolkit, kernels/ops, NNAL, driver, firmware) is
   in the bundle, else named with where to get it: community CANN packages from Ascend's
   public download host (the URL), driver and firmware from the hiascend.com download page
   (a portal login: the exact file name and the page);
6. files anywhere in DIR that the manifest does not list are reported;
7. with a site snapshot: the wheels fit the site's CPython version, architecture and glibc
   (``packaging.tags``: a wheel fits when one of its tags is among the tags the site's
   interpreter accepts), and the site's Python is the one the bundle was made for.

Every file is read through :func:`npudoctor.host.open_regular` (a FIFO, device or a read
that would block is refused, never waited on).
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any, Dict, List, Optional, Set

from npudoctor import lazyre
from npudoctor.host import file_kind, read_capped_text
from npudoctor.hostio import walk_tree
from npudoctor.knowledge.packages import UNKNOWN_CHIP
from npudoctor.plan.bundle_text import MANIFEST, REQUIREMENTS, SUMS
from npudoctor.plan.files import HDK_PAGE
from npudoctor.plan.site import Site
from npudoctor.plan.transfer import sha256_file
from npudoctor.plan.wheels import supported_tags
from npudoctor.record import MutableRecord, field


class Problem(MutableRecord):
    """One thing wrong with the bundle.  ``kind``: missing | changed | size | unlisted |
    unpinned | incompatible | python | pending | manifest | sums."""

    kind: str
    path: str
    message: str
    severity: str = "error"  # error | warning

    def to_dict(self) -> Dict[str, str]:
        return {"kind": self.kind, "path": self.path, "message": self.message, "severity": self.severity}


class VerifyReport(MutableRecord):
    directory: str
    checked: int = 0
    problems: List[Problem] = field(default_factory=list)
    site: Optional[Dict[str, Any]] = None

    @property
    def errors(self) -> List[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> Dict[str, Any]:
        return {
            "directory": self.directory,
            "ok": self.ok,
            "checked": self.checked,
            "problems": [p.to_dict() for p in self.problems],
            "site": self.site,
        }


_PIN = lazyre.pattern(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


#: Manifest nesting deeper than this is refused before it is parsed (a bundle manifest is 4 deep).
MAX_DEPTH = 32
#: Kinds of ``.run`` packages that come from the hiascend.com driver page (a portal login).
PORTAL_KINDS = ("driver", "firmware")
_HEX64 = lazyre.pattern(r"^[0-9a-f]{64}$")


def read_manifest(directory: str) -> Any:
    """``(manifest, None)`` or ``(None, reason)``: the manifest read through
    :func:`~npudoctor.host.read_capped_text` (16 MiB), nesting checked before parsing."""
    try:
        text = read_capped_text(os.path.join(directory, MANIFEST), 16 << 20, what=MANIFEST)
    except OSError as exc:
        return None, f"{MANIFEST} cannot be read: {exc.strerror or exc}"
    depth = _nesting(text)
    if depth > MAX_DEPTH:
        return None, f"{MANIFEST} is nested {depth} levels deep (at most {MAX_DEPTH}); not a bundle manifest"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return None, f"{MANIFEST} is not valid JSON: {str(exc)[:200]}"
    why = _manifest_type_error(data)
    if why:
        return None, f"{MANIFEST}: {why}"
    return data, None


def _nesting(text: str) -> int:
    """Deepest ``[``/``{`` nesting of a JSON text (brackets inside strings ignored)."""
    depth = deepest = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _manifest_type_error(data: Any) -> Optional[str]:
    """Why ``data`` is not shaped like a bundle manifest, or None."""
    if not isinstance(data, dict):
        return f"not a JSON object but {_type_name(data)}"
    files = data.get("files")
    if not isinstance(files, list):
        return f"'files' is {_type_name(files)}, not a list"
    for i, entry in enumerate(files):
        if not isinstance(entry, dict):
            return f"files[{i}] is {_type_name(entry)}, not an object"
        if not isinstance(entry.get("path"), str) or not entry["path"]:
            return f"files[{i}].path is {_type_name(entry.get('path'))}, not a file name"
        if not isinstance(entry.get("sha256"), str) or not _HEX64.match(entry["sha256"]):
            return f"files[{i}].sha256 ({entry['path'][:100]}) is not a sha256 hex digest"
        if "size" in entry and (not isinstance(entry["size"], int) or isinstance(entry["size"], bool)):
            return f"files[{i}].size ({entry['path'][:100]}) is {_type_name(entry['size'])}, not a number of bytes"
    for key in ("target", "plan"):
        if key in data and data[key] is not None and not isinstance(data[key], dict):
            return f"'{key}' is {_type_name(data[key])}, not an object"
    pending = data.get("pending")
    if pending is not None and not isinstance(pending, list):
        return f"'pending' is {_type_name(pending)}, not a list"
    packages = (data.get("plan") or {}).get("packages")
    for name, items in (("pending", pending or []), ("plan.packages", packages or [])):
        if not isinstance(items, list):
            return f"'{name}' is {_type_name(items)}, not a list"
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("filename"), str):
                return f"{name}[{i}] is not a package entry with a file name"
    return None


def verify_bundle(directory: str, site: Optional[Site] = None) -> VerifyReport:
    """Verify the bundle in ``directory``; never raises for bundle content (every defect
    is a :class:`Problem`)."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    report = VerifyReport(directory)
    manifest, why = read_manifest(directory)
    if manifest is None:
        report.problems.append(Problem("manifest", MANIFEST, str(why)))
        return report
    listed: Dict[str, str] = {}
    wheels: List[str] = []
    for entry in manifest["files"]:
        rel = entry["path"]
        report.checked += 1
        if "\0" in rel:  # no file has such a name: never handed to the OS
            report.problems.append(Problem("manifest", rel.replace("\0", "\\0"), "a path with a NUL byte; not read"))
            continue
        listed[rel] = entry["sha256"]
        outside = _outside(directory, rel)
        if outside:
            report.problems.append(Problem("manifest", rel, f"{rel}: {outside}; not read"))
            continue
        path = os.path.join(directory, rel)
        kind = _special(path)
        if kind:
            report.problems.append(Problem("changed", rel, f"{rel} is {kind}, not a file; not read"))
            continue
        if not os.path.isfile(path):
            report.problems.append(
                Problem("missing", rel, f"{rel} is missing ({entry.get('why') or entry.get('kind')})")
            )
            continue
        size = os.path.getsize(path)
        if rel.endswith(".whl"):
            wheels.append(rel)
        if isinstance(entry.get("size"), int) and size != entry["size"]:
            report.problems.append(Problem("size", rel, f"{rel} has {size} bytes, the manifest says {entry['size']}"))
            continue  # changed already: not hashed (a huge file would be read in full for nothing)
        try:
            digest = sha256_file(path)
        except OSError as exc:
            report.problems.append(Problem("changed", rel, f"{rel}: cannot read: {exc.strerror or exc}"))
            continue
        if digest != entry["sha256"]:
            report.problems.append(
                Problem(
                    "changed",
                    rel,
                    f"{rel}: sha256 {digest[:16]}… does not match the manifest ({entry['sha256'][:16]}…)",
                )
            )
    _check_sums(report, directory, listed)
    _check_unlisted(report, directory, set(listed) | {MANIFEST, SUMS})
    # requirements pins have wheels
    have: Dict[str, Set[str]] = {}
    for rel in wheels:
        try:
            wheel_name, wheel_version, _b, _t = parse_wheel_filename(os.path.basename(rel))
        except InvalidWheelFilename:
            report.problems.append(Problem("manifest", rel, f"{rel} is not a valid wheel file name"))
            continue
        have.setdefault(str(canonicalize_name(wheel_name)), set()).add(str(wheel_version))
    req_path = os.path.join(directory, REQUIREMENTS)
    try:
        if _outside(directory, REQUIREMENTS):
            raise OSError(f"{REQUIREMENTS} points outside the bundle")
        pins = read_capped_text(req_path, 1 << 20, what=REQUIREMENTS).splitlines()
    except OSError:
        pins = []  # reported as missing through the manifest
    for line in pins:
        m = _PIN.match(line.strip())
        if not m:
            continue
        name, version = str(canonicalize_name(m.group(1))), m.group(2)
        if version not in have.get(name, set()):
            report.problems.append(
                Problem(
                    "missing",
                    f"wheels/{m.group(1)}-{version}-*.whl",
                    f"{REQUIREMENTS} pins {m.group(1)}=={version} but no such wheel is in wheels/",
                )
            )
    _check_packages(report, manifest, listed)
    if site is not None:
        _check_site(report, manifest, wheels, site)
    return report


def where_to_get(pkg: Dict[str, Any]) -> str:
    """Where a ``.run`` package of the plan comes from: community CANN packages from
    Ascend's public download host (their URL, :mod:`npudoctor.plan.files`); driver and
    firmware from the hiascend.com driver page, which needs an account login."""
    kind = str(pkg.get("kind") or "")
    name = str(pkg.get("filename"))
    url = pkg.get("url") if isinstance(pkg.get("url"), str) else None
    if UNKNOWN_CHIP in name:
        return (
            f"it is chip-specific and the site snapshot names no NPU chip: give the package of the site's chip "
            f"({url or 'the hiascend.com download page'})"
        )
    if "<" in name:
        return f"its exact file name is not known: pick the {kind} package on {url or HDK_PAGE} (log in)"
    if kind in PORTAL_KINDS:
        return f"log in at {HDK_PAGE} and download {name} (Ascend HDK)" + (f"; mirror: {url}" if url else "")
    if url and url.startswith("https://ascend-repo.obs."):
        return f"public download: {url}"
    return f"download {name} from {url or 'the hiascend.com download page'} (commercial edition: needs a login)"


def _check_packages(report: VerifyReport, manifest: Dict[str, Any], listed: Dict[str, str]) -> None:
    """Every .run package the plan needs is a listed file of the bundle; each absent one is
    an error naming where to get it."""
    plan = manifest.get("plan") or {}
    needed = list(plan.get("packages") or []) or list(manifest.get("pending") or [])
    seen: Set[str] = set()
    for pkg in needed:
        name = pkg["filename"]
        rel = f"cann/{name}"
        if rel in listed or name in seen:
            continue
        seen.add(name)
        report.problems.append(
            Problem(
                "pending",
                rel,
                f"the plan needs the {pkg.get('kind') or '.run'} package {name}, which is not in the bundle "
                f"(install.sh stops on it): {where_to_get(pkg)}; then re-run npudoctor plan --cann-dir DIR",
            )
        )


def _check_sums(report: VerifyReport, directory: str, listed: Dict[str, str]) -> None:
    """SHA256SUMS, which install.sh checks with ``sha256sum -c``, agrees with the manifest."""
    try:
        if _outside(directory, SUMS):
            raise OSError(f"{SUMS} points outside the bundle")
        text = read_capped_text(os.path.join(directory, SUMS), 4 << 20, what=SUMS)
    except OSError as exc:
        report.problems.append(
            Problem(
                "sums", SUMS, f"{SUMS} cannot be read ({getattr(exc, 'strerror', None) or exc}): install.sh refuses"
            )
        )
        return
    sums: Dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = re.match(r"^([0-9a-fA-F]{64}) [ *](.+)$", line)
        if not m:
            report.problems.append(Problem("sums", SUMS, f"{SUMS} line {n} is not '<sha256>  <file>': {line[:80]!r}"))
            continue
        rel = m.group(2)
        sums[rel] = m.group(1).lower()
        if rel not in listed:
            report.problems.append(
                Problem("sums", rel, f"{SUMS} lists {rel[:200]}, which the manifest does not (install.sh checks it)")
            )
        elif listed[rel] != sums[rel]:
            report.problems.append(
                Problem(
                    "sums",
                    rel,
                    f"{SUMS} gives {rel} sha256 {sums[rel][:16]}…, the manifest {listed[rel][:16]}…: "
                    "install.sh would refuse the bundle",
                )
            )
    for rel in listed:
        if rel not in sums and rel not in (MANIFEST, SUMS):
            report.problems.append(Problem("sums", rel, f"{rel} is not in {SUMS}: install.sh would not check it"))


def _check_unlisted(report: VerifyReport, directory: str, listed: Set[str]) -> None:
    """Files anywhere in the bundle that the manifest does not list (symlinks not followed)."""
    extra: List[str] = []
    for root, dirs, files in walk_tree(directory, lambda _exc: None):
        for name in sorted(files) + sorted(d for d in dirs if os.path.islink(os.path.join(root, d))):
            rel = os.path.relpath(os.path.join(root, name), directory).replace(os.sep, "/")
            if rel not in listed:
                extra.append(rel)
        if len(extra) > 1000:
            break
    for rel in extra[:50]:
        # a wheel nobody listed is one pip may install (install.sh finds links in wheels/)
        severity = "error" if rel.startswith("wheels/") else "warning"
        report.problems.append(
            Problem("unlisted", rel, f"{rel} is not in the manifest (left over or added later)", severity)
        )
    if len(extra) > 50:
        report.problems.append(
            Problem("unlisted", ".", f"... and {len(extra) - 50} more files not in the manifest", "warning")
        )


def _outside(directory: str, rel: str) -> Optional[str]:
    """Why the manifest path ``rel`` is not confined to the bundle ``directory`` (absolute,
    ``..``, or a symlink resolving outside it), or ``None``."""
    if rel.startswith("/") or os.path.isabs(rel):
        return "an absolute path"
    if ".." in rel.replace("\\", "/").split("/"):
        return "a path with '..'"
    base = os.path.realpath(directory)
    real = os.path.realpath(os.path.join(directory, rel))
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        return "a symlink out of the bundle"
    return None


def _special(path: str) -> Optional[str]:
    """``"a FIFO"``, ``"a character device"``… when ``path`` exists and is neither a regular
    file nor a directory (never opened), else ``None``."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return file_kind(mode)


def _check_site(report: VerifyReport, manifest: Dict[str, Any], wheels: List[str], site: Site) -> None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    target = manifest.get("target") or {}
    report.site = site.summary()
    py = site.python
    if not py or not site.arch:
        report.problems.append(
            Problem(
                "python",
                "site",
                "the site snapshot lacks the Python version or architecture; tags not checked",
                "warning",
            )
        )
        return
    differs = []
    if target.get("python") and target["python"] != py:
        differs.append(f"CPython {target['python']} (the site's Python is {py})")
    if target.get("arch") and target["arch"] != site.arch:
        differs.append(f"{target['arch']} (the site is {site.arch})")
    accepted = set(supported_tags(py, site.arch, site.glibc))
    # the wheels the bundle's own target explains: one root cause, reported once with them
    planned = (
        set(supported_tags(target.get("python") or py, target.get("arch") or site.arch, site.glibc))
        if differs
        else set()
    )
    folded: List[str] = []
    first = len(report.problems)
    for rel in wheels:
        try:
            _n, _v, _b, tags = parse_wheel_filename(os.path.basename(rel))
        except InvalidWheelFilename:
            continue
        if tags & accepted:
            continue
        if tags & planned:
            folded.append(os.path.basename(rel))
            continue
        shown = ", ".join(sorted(str(t) for t in tags))
        report.problems.append(
            Problem(
                "incompatible",
                rel,
                f"{rel} ({shown}) does not fit CPython {py} on {site.arch} with glibc {site.glibc or 'unknown'}",
            )
        )
    if differs:
        names = ", ".join(folded[:3]) + (f" and {len(folded) - 3} more" if len(folded) > 3 else "")
        fit = f"{len(folded)} of its {len(wheels)} wheels do not fit the site ({names})" if folded else "its wheels fit"
        fix = (
            f"install CPython {target['python']} there and give it to install.sh --python, "
            f"or plan again with --python {py}"
            if target.get("python") and target["python"] != py
            else "plan again for this site"
        )
        report.problems.insert(
            first, Problem("python", "site", f"the bundle is for {' on '.join(differs)}: {fit}; {fix}")
        )
