"""The wheels a plan needs, resolved FOR THE SITE, never for this machine.

pip evaluates environment markers (``platform_machine``, ``python_version``…) for the
interpreter it runs under, whatever ``--platform``/``--python-version`` say: torch 2.10.0
marks its ``nvidia-*`` requirements ``platform_machine == "x86_64"``, so a plan made on an
x86_64 machine for an aarch64 site bundled 2.9 GB of CUDA wheels (measured).  So pip
only picks files here: :func:`resolve_wheels` asks it, one round at a time and with
``--no-deps``, which wheel satisfies each requirement (``pip install --dry-run --report``
for the site's CPython, ABI and platform tags), reads each chosen wheel's ``Requires-Dist``
from pip's report and evaluates the markers itself with :func:`marker_environment` (the
site's), until the dependency closure no longer changes.  A conflict (no release of a
dependency meets every parent's specifier) backtracks to an older release of the parent
whose requirement cannot be met; a wheel whose Requires-Python excludes the site's Python
is replaced by an older release (pip does not hold find-links wheels to --python-version).

torch is resolved from the PyTorch CPU index alone when the plan names one (so a CUDA torch
of the default index can never win), and :func:`cuda_reason` refuses any CUDA distribution
(``nvidia-*``, ``cuda-*``, CUDA triton, a ``+cuNNN`` build) before pip is asked about it and
again on what pip picks: such a wheel is never resolved or downloaded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from npudoctor import lazyre
from npudoctor.host import read_capped_text
from npudoctor.plan.wheels import platform_tags
from npudoctor.record import MutableRecord, field

#: Distributions that exist only for NVIDIA GPUs: CUDA runtime/library wheels and the CUDA
#: builds of triton (Ascend's is ``triton-ascend``).  Names are PEP 503-normalised.
_CUDA_NAMES = lazyre.pattern(r"^(nvidia-.+|cuda-.+|cupy-cuda.*|triton|pytorch-triton)$")
#: A CUDA local build tag (``2.5.1+cu121``).
_CUDA_LOCAL = lazyre.pattern(r"(^|\.)cu\d+($|\.)")
#: Rounds of the closure loop before giving up (each round is one pip call per source).
MAX_ROUNDS = 80


class ResolveError(RuntimeError):
    """The wheels could not be resolved (pip found none, a CUDA distribution is required,
    the closure did not settle).  ``details`` holds pip's last lines or the chain."""

    def __init__(
        self, message: str, details: Sequence[str] = (), failed: str = "", versions: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.details = list(details)
        #: the requirement pip found no wheel for, and the versions it saw (for backtracking)
        self.failed = failed
        self.versions = list(versions)


class Target(MutableRecord):
    """The site's interpreter: CPython ``python`` ("3.10"), ``arch``, ``glibc`` (None =
    assume 2.28, see :func:`~npudoctor.plan.wheels.platform_tags`)."""

    python: str
    arch: str
    glibc: Optional[str] = None
    python_full: Optional[str] = None


class Sources(MutableRecord):
    """Where pip looks: the default index (pip's own configuration when ``index_url`` is
    None), extra indexes, find-links, and the index torch alone comes from."""

    index_url: Optional[str] = None
    extra_index_urls: List[str] = field(default_factory=list)
    find_links: List[str] = field(default_factory=list)
    torch_index_url: Optional[str] = None

    def auth_for(self, url: str) -> Optional[Tuple[str, str]]:
        """(user, password) of the index URL given with credentials whose host serves
        ``url`` (pip's report carries URLs without them), or None."""
        from urllib.parse import unquote, urlsplit

        host = urlsplit(url).netloc.rpartition("@")[2]
        for index in [self.index_url, self.torch_index_url, *self.extra_index_urls]:
            parts = urlsplit(index or "")
            if parts.username is not None and parts.netloc.rpartition("@")[2] == host:
                return unquote(parts.username), unquote(parts.password or "")
        return None

    def argv(self, torch: bool) -> List[str]:
        """pip options for torch (``torch`` true: its own index only) or for everything else."""
        out: List[str] = []
        if torch and self.torch_index_url:
            out += ["--index-url", self.torch_index_url]
        else:
            if self.index_url:
                out += ["--index-url", self.index_url]
            for url in self.extra_index_urls:
                out += ["--extra-index-url", url]
        for link in self.find_links:
            out += ["--find-links", link]
        return out


class Wheel(MutableRecord):
    """One resolved wheel: canonical ``name``, ``version``, file name, where pip found it,
    its sha256 (from the index), size in bytes (None until :func:`fill_sizes`, or unknown)
    and who needs it."""

    name: str
    version: str
    filename: str
    url: str
    sha256: Optional[str]
    requires: List[str]
    size: Optional[int] = None
    required_by: List[str] = field(default_factory=list)
    requires_python: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "filename": self.filename,
            "url": self.url,
            "sha256": self.sha256,
            "size": self.size,
            "required_by": list(self.required_by),
        }


def marker_environment(target: Target) -> Dict[str, str]:
    """The PEP 508 marker environment of the site's CPython on Linux (every key, so nothing
    of this machine's interpreter leaks into an evaluation)."""
    full = target.python_full if (target.python_full or "").startswith(target.python + ".") else None
    full = full or f"{target.python}.0"
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": "posix",
        "platform_machine": target.arch,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full,
        "python_version": target.python,
        "sys_platform": "linux",
        "extra": "",
    }


def cuda_reason(name: str, version: str = "") -> Optional[str]:
    """Why distribution ``name`` (``version``) is CUDA-only, or None."""
    from packaging.utils import canonicalize_name

    norm = str(canonicalize_name(name))
    if _CUDA_NAMES.match(norm):
        if norm in ("triton", "pytorch-triton"):
            return f"{norm} is the CUDA build of Triton (Ascend's is triton-ascend)"
        return f"{norm} is an NVIDIA CUDA distribution"
    local = version.partition("+")[2]
    if local and _CUDA_LOCAL.search(local):
        return f"{norm} {version} is a CUDA build (+{local})"
    return None


def _wanted(requirement: Any, env: Dict[str, str], extras: Set[str]) -> bool:
    """Whether ``requirement`` applies on the site (for the extras asked of its parent)."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate(dict(env, extra=extra)) for extra in sorted(extras | {""}))


class _Need(MutableRecord):
    spec: Any
    extras: Set[str]
    required_by: List[str]
    by_parent: Dict[str, Any] = field(default_factory=dict)


def _walk(top: Sequence[Any], chosen: Dict[str, Wheel], env: Dict[str, str]) -> Dict[str, _Need]:
    """The closure of ``top`` over the wheels chosen so far: per canonical name, the combined
    specifier, extras and the parents that need it (``"plan"`` for top-level requirements)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier
    from packaging.utils import canonicalize_name

    needs: Dict[str, _Need] = {}
    queue: List[Tuple[Any, str]] = [(r, "plan") for r in top]
    seen_edges: Set[Tuple[str, str]] = set()
    while queue:
        req, parent = queue.pop(0)
        name = str(canonicalize_name(req.name))
        edge = (parent, f"{name}{req.specifier}[{','.join(sorted(req.extras))}]")
        if edge in seen_edges:
            continue
        seen_edges.add(edge)
        need = needs.get(name)
        if need is None:
            need = needs[name] = _Need(req.specifier, set(req.extras), [parent])
        else:
            need.spec &= req.specifier
            need.extras |= set(req.extras)
            if parent not in need.required_by:
                need.required_by.append(parent)
        need.by_parent[parent] = need.by_parent[parent] & req.specifier if parent in need.by_parent else req.specifier
        wheel = chosen.get(name)
        if wheel is None:
            continue
        for text in wheel.requires:
            try:
                dep = Requirement(text)
            except (InvalidRequirement, InvalidSpecifier):
                raise ResolveError(f"{wheel.filename} has an invalid Requires-Dist: {text!r}") from None
            if _wanted(dep, env, need.extras):
                queue.append((dep, name))
    return needs


def _satisfied(need: _Need, wheel: Optional[Wheel]) -> bool:
    return wheel is not None and need.spec.contains(wheel.version, prereleases=True)


def _run_pip(argv: List[str], env: Optional[Dict[str, str]], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            text=True,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        raise ResolveError(f"pip did not answer within {timeout:.0f} s") from None
    except OSError as exc:
        raise ResolveError(f"cannot run pip ({argv[0]}): {exc.strerror or exc}") from None


def _report(
    reqs: List[str],
    torch: bool,
    target: Target,
    sources: Sources,
    pip: List[str],
    env: Optional[Dict[str, str]],
    timeout: float,
) -> List[Wheel]:
    """One pip call: which wheel satisfies each of ``reqs`` for the target (no dependencies)."""
    py = target.python.replace(".", "")
    work = tempfile.mkdtemp(prefix="npudoctor-resolve-")
    try:
        report = os.path.join(work, "report.json")
        argv = list(pip) + ["install", "--dry-run", "--ignore-installed", "--no-deps", "--only-binary=:all:"]
        argv += ["--no-input", "--quiet", "--report", report, "--target", os.path.join(work, "t")]
        argv += ["--python-version", target.python, "--implementation", "cp", "--abi", f"cp{py}"]
        for tag in platform_tags(target.arch, target.glibc):
            argv += ["--platform", tag]
        argv += sources.argv(torch) + reqs
        proc = _run_pip(argv, env, timeout)
        if proc.returncode != 0:
            tail = [line for line in (proc.stdout or "").splitlines() if line.strip()][-12:]
            where = (
                "the torch index " + str(sources.torch_index_url) if torch and sources.torch_index_url else "the index"
            )
            named = re.findall(r"No matching distribution found for (\S+)", proc.stdout or "")
            seen = re.search(r"\(from versions: ([^)]*)\)", proc.stdout or "")
            versions = [v.strip() for v in seen.group(1).split(",") if v.strip()] if seen else []
            raise ResolveError(
                f"pip could not download the wheels for Python {target.python} on {target.arch} "
                f"(glibc {target.glibc or 'assumed 2.28'}): no wheel of {', '.join(named) or ', '.join(reqs)} "
                f"in {where}; pip said:",
                tail,
                named[0] if named else "",
                versions,
            )
        try:
            doc = json.loads(read_capped_text(report, 64 << 20, what="pip report"))
        except (OSError, ValueError, RecursionError) as exc:
            raise ResolveError(f"cannot read pip's report: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    install = doc.get("install") if isinstance(doc, dict) else None
    wheels = [_wheel_of(item) for item in (install if isinstance(install, list) else []) if isinstance(item, dict)]
    for wheel in wheels:
        name = wheel.filename
        if not name.endswith(".whl") or "/" in name or "\\" in name or name.startswith(".") or "\0" in name:
            raise ResolveError(f"pip's report names an unusable wheel file {name[:200]!r} ({wheel.url[:200]})")
    return wheels


def _wheel_of(item: Dict[str, Any]) -> Wheel:
    from urllib.parse import unquote, urlsplit

    from packaging.utils import canonicalize_name

    meta = item.get("metadata") or {}
    info = item.get("download_info") or {}
    url = str(info.get("url") or "")
    archive = info.get("archive_info") or {}
    hashes = archive.get("hashes") or {}
    digest = hashes.get("sha256")
    if not digest and str(archive.get("hash", "")).startswith("sha256="):
        digest = str(archive["hash"])[7:]
    requires = meta.get("requires_dist") or []
    return Wheel(
        name=str(canonicalize_name(str(meta.get("name", "")))),
        version=str(meta.get("version", "")),
        filename=unquote(os.path.basename(urlsplit(url).path)),
        url=url.split("#", 1)[0],
        sha256=digest if isinstance(digest, str) else None,
        requires=[str(r) for r in requires if isinstance(r, str)],
        requires_python=meta.get("requires_python") if isinstance(meta.get("requires_python"), str) else None,
    )


def resolve_wheels(
    requirements: Sequence[str],
    target: Target,
    sources: Sources,
    pip: Sequence[str],
    env: Optional[Dict[str, str]] = None,
    timeout: float = 600.0,
) -> List[Wheel]:
    """Every wheel the site needs for ``requirements`` (pip requirement strings), in the
    order found (top-level first).  Raises :class:`ResolveError`: pip found no wheel, a CUDA
    distribution would be needed (named with the chain that requires it), or the closure
    did not settle in :data:`MAX_ROUNDS` rounds."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        top = [Requirement(r) for r in requirements]
    except (InvalidRequirement, InvalidSpecifier) as exc:
        raise ResolveError(f"invalid requirement: {exc}") from None
    menv = marker_environment(target)
    top = [r for r in top if _wanted(r, menv, set())]
    chosen: Dict[str, Wheel] = {}
    banned: Dict[str, Any] = {}  # name -> specifier excluding versions that led to a conflict
    for _round in range(MAX_ROUNDS):
        needs = _walk(top, chosen, menv)
        for name, ban in banned.items():
            if name in needs:
                needs[name].spec &= ban
        todo = [name for name, need in needs.items() if not _satisfied(need, chosen.get(name))]
        if not todo:
            out = [chosen[name] for name in needs]
            for wheel in out:
                wheel.required_by = list(needs[wheel.name].required_by)
            return out
        for name in todo:
            why = cuda_reason(name)
            if why:
                raise _cuda_error(name, why, needs, chosen)
        for torch in (True, False):
            group = [n for n in todo if (n == "torch") == torch]
            if not group:
                continue
            reqs = [
                f"{n}{'[' + ','.join(sorted(needs[n].extras)) + ']' if needs[n].extras else ''}{needs[n].spec}"
                for n in group
            ]
            try:
                found = _report(reqs, torch, target, sources, list(pip), env, timeout)
            except ResolveError as exc:
                culprit = _culprit(exc, needs, chosen)
                if culprit is None:
                    raise
                # backtrack: an older release of the parent whose requirement cannot be met
                try:
                    older = SpecifierSet(f"<{Version(chosen[culprit].version).public}")
                except (InvalidVersion, InvalidSpecifier):
                    raise exc from None
                banned[culprit] = banned.get(culprit, SpecifierSet()) & older
                del chosen[culprit]
                break
            for wheel in found:
                why = cuda_reason(wheel.name, wheel.version)
                if why:
                    raise _cuda_error(wheel.name, why, needs, chosen)
                if not _fits_python(wheel, menv["python_full_version"]):
                    # pip does not always hold Requires-Python against --python-version (a
                    # find-links wheel): an older release, next round
                    try:
                        older = SpecifierSet(f"<{Version(wheel.version).public}")
                    except (InvalidVersion, InvalidSpecifier):
                        raise ResolveError(
                            f"{wheel.filename} requires Python {wheel.requires_python}; the site has {target.python}"
                        ) from None
                    banned[wheel.name] = banned.get(wheel.name, SpecifierSet()) & older
                    chosen.pop(wheel.name, None)
                    continue
                chosen[wheel.name] = wheel
            missing = [n for n in group if n not in chosen and n not in banned]
            if missing:
                raise ResolveError(f"pip's report has no wheel for {', '.join(missing)}")
    raise ResolveError(f"the dependency closure did not settle after {MAX_ROUNDS} rounds")


def _fits_python(wheel: Wheel, python_full: str) -> bool:
    """Whether the wheel's Requires-Python admits the site's Python (an unreadable one does)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not wheel.requires_python:
        return True
    try:
        return SpecifierSet(wheel.requires_python).contains(python_full, prereleases=True)
    except InvalidSpecifier:
        return True


def _culprit(exc: ResolveError, needs: Dict[str, _Need], chosen: Dict[str, Wheel]) -> Optional[str]:
    """The chosen parent whose requirement makes ``exc.failed`` unsatisfiable: without its
    specifier, one of the versions pip saw satisfies all the others.  None when the conflict
    is with the plan's own requirements (or pip did not list versions)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    try:
        name = str(canonicalize_name(Requirement(exc.failed).name))
    except (InvalidRequirement, InvalidSpecifier):
        return None
    need = needs.get(name)
    versions = []
    for text in exc.versions:
        try:
            versions.append(Version(text))
        except InvalidVersion:
            continue
    if need is None or not versions:
        return None
    for parent in reversed(need.required_by):  # the latest-found parent first
        if parent == "plan" or parent not in chosen:
            continue
        rest = SpecifierSet()
        for other, spec in need.by_parent.items():
            if other != parent:
                rest &= spec
        if any(rest.contains(v, prereleases=True) for v in versions):
            return parent
    return None


def _chain(name: str, needs: Dict[str, _Need], chosen: Dict[str, Wheel]) -> str:
    """``torch 2.11.0 → nvidia-cublas-cu12``: who brings ``name`` in (first parents)."""
    parts = [name]
    seen = {name}
    cur = name
    while cur in needs and needs[cur].required_by and needs[cur].required_by[0] != "plan":
        cur = needs[cur].required_by[0]
        if cur in seen:
            break
        seen.add(cur)
        wheel = chosen.get(cur)
        parts.append(f"{cur} {wheel.version}" if wheel else cur)
    return " → ".join(reversed(parts))


def _cuda_error(name: str, why: str, needs: Dict[str, _Need], chosen: Dict[str, Wheel]) -> ResolveError:
    chain = _chain(name, needs, chosen)
    parents = [p for p in (needs[name].required_by if name in needs else []) if p != "plan"]
    hint = (
        "torch for an Ascend site must be the CPU build: give the PyTorch CPU index (--torch-index-url)"
        if "torch" in parents or name == "torch"
        else "a CUDA-only package cannot run on an Ascend NPU; leave it out of the plan"
    )
    return ResolveError(f"refusing {name}: {why}; required on the site by {chain}; {hint}", [chain])


def fill_sizes(wheels: Sequence[Wheel], auth: Callable[[str], Any] = lambda url: None, timeout: float = 30.0) -> None:
    """Set ``size`` of each wheel: ``os.stat`` for ``file:`` URLs, an HTTP HEAD request
    (Content-Length) otherwise; left None when unknown (the server does not say)."""
    from urllib.parse import unquote, urlsplit

    import requests

    from npudoctor.plan.transfer import ca_bundle

    session = requests.Session()
    for wheel in wheels:
        parts = urlsplit(wheel.url)
        try:
            if parts.scheme == "file":
                wheel.size = os.stat(unquote(parts.path)).st_size
            elif parts.scheme in ("http", "https"):
                resp = session.head(
                    wheel.url, allow_redirects=True, timeout=timeout, auth=auth(wheel.url), verify=ca_bundle()
                )
                length = resp.headers.get("Content-Length")
                if resp.status_code == 200 and length and length.isdigit():
                    wheel.size = int(length)
        except (OSError, requests.RequestException):
            wheel.size = None


def human_size(n: Optional[int]) -> str:
    """``"1.2 MB"`` (decimal units, as pip prints), ``"?"`` for unknown."""
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"
