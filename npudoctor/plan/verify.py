"""``npudoctor plan verify DIR [--for site.json]``: is this bundle complete, intact and
right for this machine?

Checks, in order:

1. ``manifest.json`` is readable (written by :mod:`npudoctor.plan.bundle`);
2. every file it lists is present, with the recorded size and sha256 (a changed byte or a
   missing wheel is named);
3. every pin of ``requirements.txt`` has its wheel;
4. files in ``wheels/`` and ``cann/`` that the manifest does not list are reported;
5. with a site snapshot: the wheels fit the site's CPython version, architecture and glibc
   (``packaging.tags``: a wheel fits when one of its tags is among the tags the site's
   interpreter accepts), and the site's Python is the one the bundle was made for;
6. packages the plan needs but the bundle does not hold (``pending``) are listed with
   where to download them.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set

from npudoctor.host import file_kind, read_capped_text
from npudoctor.plan.bundle import load_manifest
from npudoctor.plan.bundle_text import MANIFEST, REQUIREMENTS
from npudoctor.plan.site import Site
from npudoctor.plan.transfer import sha256_file
from npudoctor.plan.wheels import supported_tags


@dataclass
class Problem:
    """One thing wrong with the bundle.  ``kind``: missing | changed | size | unlisted |
    unpinned | incompatible | python | pending | manifest."""

    kind: str
    path: str
    message: str
    severity: str = "error"  # error | warning

    def to_dict(self) -> Dict[str, str]:
        return {"kind": self.kind, "path": self.path, "message": self.message, "severity": self.severity}


@dataclass
class VerifyReport:
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


_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def verify_bundle(directory: str, site: Optional[Site] = None) -> VerifyReport:
    """Verify the bundle in ``directory``; never raises for bundle content (every defect
    is a :class:`Problem`)."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    report = VerifyReport(directory)
    manifest = load_manifest(directory)
    if manifest is None or not isinstance(manifest.get("files"), list):
        report.problems.append(Problem("manifest", MANIFEST, f"{MANIFEST} is missing or not valid JSON"))
        return report
    listed = set()
    wheels: List[str] = []
    for entry in manifest["files"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            report.problems.append(Problem("manifest", MANIFEST, f"malformed file entry: {entry!r}"[:200]))
            continue
        rel = entry["path"]
        listed.add(rel)
        report.checked += 1
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
        if isinstance(entry.get("size"), int) and size != entry["size"]:
            report.problems.append(Problem("size", rel, f"{rel} has {size} bytes, the manifest says {entry['size']}"))
        try:
            digest = sha256_file(path)
        except OSError as exc:
            report.problems.append(Problem("changed", rel, f"{rel}: cannot read: {exc.strerror or exc}"))
            continue
        if digest != entry.get("sha256"):
            report.problems.append(
                Problem(
                    "changed",
                    rel,
                    f"{rel}: sha256 {digest[:16]}… does not match the manifest ({str(entry.get('sha256'))[:16]}…)",
                )
            )
        if rel.endswith(".whl"):
            wheels.append(rel)
    # unlisted files
    for sub in ("wheels", "cann"):
        d = os.path.join(directory, sub)
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                rel = f"{sub}/{name}"
                if rel not in listed:
                    report.problems.append(
                        Problem("unlisted", rel, f"{rel} is not in the manifest (left over or added later)", "warning")
                    )
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
    # pending packages
    for p in manifest.get("pending") or []:
        if isinstance(p, dict):
            report.problems.append(
                Problem(
                    "pending",
                    f"cann/{p.get('filename')}",
                    f"{p.get('kind')} package {p.get('filename')} is not in the bundle; download: {p.get('url') or '?'}",
                    "warning",
                )
            )
    if site is not None:
        _check_site(report, manifest, wheels, site)
    return report


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
    if target.get("python") and target["python"] != py:
        report.problems.append(
            Problem("python", "site", f"the bundle is for CPython {target['python']}; the site's Python is {py}")
        )
    if target.get("arch") and target["arch"] != site.arch:
        report.problems.append(
            Problem("python", "site", f"the bundle is for {target['arch']}; the site is {site.arch}")
        )
    accepted = set(supported_tags(py, site.arch, site.glibc))
    for rel in wheels:
        try:
            _n, _v, _b, tags = parse_wheel_filename(os.path.basename(rel))
        except InvalidWheelFilename:
            continue
        if not tags & accepted:
            shown = ", ".join(sorted(str(t) for t in tags))
            report.problems.append(
                Problem(
                    "incompatible",
                    rel,
                    f"{rel} ({shown}) does not fit CPython {py} on {site.arch} with glibc {site.glibc or 'unknown'}",
                )
            )
