"""Write an offline install bundle for a :class:`~npudoctor.plan.resolve.Plan`.

Layout of the bundle directory::

    wheels/            every wheel the target interpreter needs, resolved for the SITE
                       (markers evaluated for its CPython and architecture, no CUDA
                       wheel ever: :mod:`npudoctor.plan.closure`), each checked against
                       the sha256 its index published
    cann/              the CANN / driver / firmware ``.run`` packages (copied from
                       ``--cann-dir`` or fetched with ``--fetch-cann``), checked
    requirements.txt   every wheel pinned by version and sha256 (``--require-hashes``)
    SHA256SUMS         ``sha256sum -c`` format, every file but itself and manifest.json
    install.sh         offline installer: verify hashes, driver/firmware, toolkit,
                       kernels/ops, NNAL, then ``pip install --no-index --find-links wheels``,
                       ``source set_env.sh``, ``npudoctor check``
    INSTALL.md         the same for humans
    manifest.json      every file with size, sha256 and why it is there; the plan; the
                       packages still to be fetched ("pending")

Re-running is resumable: files already present with the hash the previous manifest
recorded are kept, and nothing is ever
half-written under a final name (downloads go to ``.staging/`` or ``*.part`` and are
renamed when complete and checked).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import zipfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from npudoctor.host import read_capped_text
from npudoctor.knowledge.packages import UNKNOWN_CHIP
from npudoctor.plan.bundle_text import MANIFEST, REQUIREMENTS, SITE, SUMS, install_md, install_sh, requirements_text
from npudoctor.plan.closure import ResolveError, Sources, Target, Wheel, cuda_reason, fill_sizes, resolve_wheels
from npudoctor.plan.files import PackageFile
from npudoctor.plan.model import Plan
from npudoctor.plan.site import Site
from npudoctor.plan.transfer import check_run_file, copy_checked, fetch_url, phase, progress_bar, sha256_file
from npudoctor.record import MutableRecord, field
from npudoctor.snapshot import atomic_write, now_iso


class BundleError(RuntimeError):
    """The bundle could not be made (pip found no wheel for the target, a copy failed...).
    ``details`` holds the tail of pip's output or the files concerned."""

    def __init__(self, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.details = list(details)


class BundleOptions(MutableRecord):
    """How to fetch.  ``index_url``/``extra_index_urls``/``find_links`` are passed to pip
    as given; ``torch_index_url`` replaces the PyTorch CPU index of the plan (x86_64 +cpu
    builds).  ``pip`` is the command prefix running pip; ``env`` the environment of pip
    (default: this process's)."""

    output: str
    index_url: Optional[str] = None
    extra_index_urls: List[str] = field(default_factory=list)
    find_links: List[str] = field(default_factory=list)
    torch_index_url: Optional[str] = None
    cann_dir: Optional[str] = None
    fetch_cann: bool = False
    pip: List[str] = field(default_factory=lambda: [sys.executable, "-m", "pip"])
    env: Optional[Dict[str, str]] = None
    timeout: float = 3600.0
    progress: bool = False
    site_file: Optional[str] = None  # the site snapshot, copied in as site.json


class BundleResult(MutableRecord):
    """What was written."""

    output: str
    files: List[Dict[str, Any]]
    kept: List[str]
    downloaded: List[str]
    pending: List[Dict[str, Any]]
    manifest: str


# --------------------------------------------------------------------------- helpers
def _valid_wheel(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.testzip() is None and any(n.endswith(".dist-info/METADATA") for n in zf.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def _wheel_metadata(path: str) -> Tuple[str, str, List[str]]:
    """(name, version, Requires-Dist) from a wheel's METADATA."""
    from email.parser import HeaderParser

    with zipfile.ZipFile(path) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        text = zf.read(meta).decode("utf-8", "replace")
    msg = HeaderParser().parsestr(text)
    return str(msg.get("Name", "")), str(msg.get("Version", "")), [str(r) for r in msg.get_all("Requires-Dist") or []]


def load_manifest(directory: str) -> Optional[Dict[str, Any]]:
    """The manifest of a bundle, or ``None`` when absent or unreadable (a FIFO or device
    in its place included: see :func:`npudoctor.host.read_capped_text`)."""
    try:
        data = json.loads(read_capped_text(os.path.join(directory, MANIFEST), 16 << 20, what=MANIFEST))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def wheel_sources(plan: Plan, opts: BundleOptions) -> Sources:
    """Where pip looks for the plan's wheels: the given indexes and find-links, and torch
    from the PyTorch CPU index alone when the plan needs its CPU build there
    (``--torch-index-url`` replaces the index)."""
    torch_index = (opts.torch_index_url or plan.torch_index) if plan.torch_index else None
    return Sources(opts.index_url, list(opts.extra_index_urls), list(opts.find_links), torch_index)


def resolve_plan_wheels(plan: Plan, site: Site, opts: BundleOptions) -> List[Wheel]:
    """Every wheel of the plan, resolved for the SITE's CPython, architecture and glibc with
    the markers evaluated for the site (:mod:`npudoctor.plan.closure`), with sizes.  Raises
    :class:`BundleError` (pip found no wheel, a CUDA distribution would be needed)."""
    full = site.python_full if site.python == plan.python else None
    target = Target(plan.python, plan.arch, plan.glibc, full)
    sources = wheel_sources(plan, opts)
    env = dict(opts.env if opts.env is not None else os.environ)
    try:
        with phase(opts.progress, f"wheels: asking pip for CPython {plan.python} on {plan.arch}"):
            wheels = resolve_wheels(plan.requirements, target, sources, opts.pip, env, opts.timeout)
    except ResolveError as exc:
        raise BundleError(str(exc), exc.details) from None
    with phase(opts.progress, f"wheels: reading the sizes of {len(wheels)} files"):
        fill_sizes(wheels, sources.auth_for)
    return wheels


# --------------------------------------------------------------------------- bundle
def _why_wheels(plan: Plan, wheels: Dict[str, str]) -> Dict[str, str]:
    """Reason per wheel file: the top-level requirement it satisfies, or who requires it."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier
    from packaging.utils import canonicalize_name

    meta: Dict[str, Tuple[str, str, List[str]]] = {}
    for fname, path in wheels.items():
        try:
            meta[fname] = _wheel_metadata(path)
        except (StopIteration, OSError, KeyError, zipfile.BadZipFile):
            meta[fname] = ("", "", [])
    top: Dict[str, str] = {}
    reasons = {
        "torch-npu": f"torch_npu {plan.torch_npu}: the planned build",
        "torch": f"{plan.torch_requirement}: required by torch_npu {plan.torch_npu} (Requires-Dist)",
        "numpy": f"{plan.numpy}: numpy range CANN {plan.cann} needs on Python {plan.python}",
    }
    for req in plan.requirements:
        try:
            project = str(canonicalize_name(Requirement(req).name))
        except (InvalidRequirement, InvalidSpecifier):
            continue
        top[project] = reasons.get(project) or (
            f"{req}: CANN {plan.cann} Python dependency" if req in plan.python_deps else f"{req}: torch_npu docs"
        )
    required_by: Dict[str, List[str]] = {}
    for _fname, (name, _v, reqs) in meta.items():
        for r in reqs:
            try:
                parsed = Requirement(r)
            except (InvalidRequirement, InvalidSpecifier):
                continue
            if parsed.marker is not None and "extra" in str(parsed.marker):
                continue
            required_by.setdefault(str(canonicalize_name(parsed.name)), []).append(name)
    out = {}
    for fname, (name, _v, _r) in meta.items():
        key = str(canonicalize_name(name)) if name else ""
        if key in top:
            out[fname] = top[key]
        elif key in required_by:
            out[fname] = "dependency of " + ", ".join(sorted(set(required_by[key])))
        else:
            out[fname] = "dependency resolved by pip"
    return out


def download_wheels(
    plan: Plan, opts: BundleOptions, wheels: Sequence[Wheel], log: Callable[[str], None], progress: Any = None
) -> Tuple[List[str], List[str]]:
    """Fetch ``wheels`` (from :func:`resolve_plan_wheels`) into ``<output>/wheels``, each
    checked against the sha256 its index published; returns (downloaded, kept) file names.
    A wheel already there with that hash is kept; anything else in ``wheels/`` is removed.
    Nothing lands under its final name before it is complete and checked.  Raises
    :class:`BundleError` (a download failed or its hash differs)."""
    sources = wheel_sources(plan, opts)
    wheels_dir = os.path.join(opts.output, "wheels")
    staging = os.path.join(opts.output, ".staging")
    os.makedirs(wheels_dir, exist_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    wanted = {w.filename: w for w in wheels}
    for name in sorted(os.listdir(wheels_dir)):
        path = os.path.join(wheels_dir, name)
        if name not in wanted:
            log(f"removing {name}: not part of this plan")
            with contextlib.suppress(OSError):
                os.unlink(path)
    total = progress.add_task("wheels", total=sum(w.size or 0 for w in wheels) or None) if progress else None
    downloaded: List[str] = []
    kept: List[str] = []
    try:
        for wheel in wheels:
            refused = cuda_reason(wheel.name, wheel.version)
            if refused:  # resolve_wheels never returns one; wheels given by a caller are checked too
                raise BundleError(f"refusing to download {wheel.filename}: {refused}")
            dest = os.path.join(wheels_dir, wheel.filename)
            if os.path.isfile(dest) and wheel.sha256 and _sha_or_none(dest) == wheel.sha256:
                kept.append(wheel.filename)
            else:
                if os.path.lexists(dest):
                    log(f"replacing {wheel.filename}: its hash does not match the index")
                part = os.path.join(staging, wheel.filename)
                try:
                    digest = fetch_url(wheel.url, part, progress, referer=None, auth=sources.auth_for(wheel.url))
                except OSError as exc:
                    raise BundleError(f"cannot download {wheel.filename}: {exc}") from None
                if wheel.sha256 and digest != wheel.sha256:
                    raise BundleError(
                        f"{wheel.filename}: downloaded sha256 {digest[:16]}… differs from the index's "
                        f"{wheel.sha256[:16]}… (a proxy or mirror changed it?)"
                    )
                if not _valid_wheel(part):
                    raise BundleError(f"downloaded wheel {wheel.filename} is not a valid wheel (truncated?)")
                os.replace(part, dest)
                downloaded.append(wheel.filename)
            if progress:
                progress.update(total, advance=wheel.size or 0)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(downloaded), sorted(kept)


def _sha_or_none(path: str) -> Optional[str]:
    try:
        return sha256_file(path)
    except OSError:
        return None


def gather_cann(
    plan: Plan, opts: BundleOptions, log: Callable[[str], None], progress: Any
) -> Tuple[List[Tuple[PackageFile, str, str]], List[Dict[str, Any]], List[str]]:
    """Copy/fetch the ``.run`` packages into ``<output>/cann``.  Returns ([(package,
    relative path, sha256)], pending entries, kept names).  Raises :class:`BundleError`
    when a given file is not a plausible .run package."""
    cann_dir = os.path.join(opts.output, "cann")
    previous = load_manifest(opts.output) or {}
    known = {f["path"]: f.get("sha256") for f in previous.get("files", []) if isinstance(f, dict) and "path" in f}
    have: List[Tuple[PackageFile, str, str]] = []
    pending: List[Dict[str, Any]] = []
    kept: List[str] = []
    for n, pkg in enumerate(plan.packages):
        if UNKNOWN_CHIP in pkg.filename and pkg.kind in ("kernels", "ops"):
            given, detail = _given_kernels(pkg, plan.arch, opts.cann_dir)
            if given is None:
                pending.append(dict(pkg.to_dict(), reason=detail))
                continue
            log(f"{given.filename}: the {pkg.kind} package for {detail} chips, taken from --cann-dir")
            pkg = plan.packages[n] = given  # the bundle's manifest and install.sh name the file given
        rel = f"cann/{pkg.filename}"
        dest = os.path.join(opts.output, rel)
        if "<" in pkg.filename:
            pending.append(dict(pkg.to_dict(), reason="exact file name unknown"))
            continue
        recorded = known.get(rel)
        if os.path.isfile(dest) and recorded and sha256_file(dest) == recorded:
            have.append((pkg, rel, str(recorded)))
            kept.append(pkg.filename)
            continue
        src = os.path.join(opts.cann_dir, pkg.filename) if opts.cann_dir else None
        digest = None
        if src and os.path.isfile(src):
            why = check_run_file(src)
            if why:
                raise BundleError(f"--cann-dir {src}: {why}")
            os.makedirs(cann_dir, exist_ok=True)
            digest = copy_checked(src, dest, progress)
            log(f"copied {pkg.filename}")
        elif opts.fetch_cann and pkg.url and pkg.url.endswith(pkg.filename):
            os.makedirs(cann_dir, exist_ok=True)
            try:
                digest = fetch_url(pkg.url, dest, progress)
            except OSError as exc:
                pending.append(dict(pkg.to_dict(), reason=f"fetch failed: {exc}"))
                continue
            why = check_run_file(dest)
            if why:
                os.unlink(dest)
                pending.append(dict(pkg.to_dict(), reason=f"fetched file rejected: {why}"))
                continue
            log(f"fetched {pkg.filename}")
        if digest is None:
            hint = f"not in --cann-dir {opts.cann_dir}" if opts.cann_dir else "download it and re-run with --cann-dir"
            pending.append(dict(pkg.to_dict(), reason=hint))
            continue
        have.append((pkg, rel, digest))
    return have, pending, kept


def _given_kernels(pkg: PackageFile, arch: str, cann_dir: Optional[str]) -> Tuple[Optional[PackageFile], str]:
    """The kernels/ops package for a site whose chip is unknown (``pkg`` names it ``<chip>``):
    the one such package of CANN ``pkg.version`` in ``cann_dir``, as ``(package, its chip)``;
    else ``(None, why)``: none or several there (the chip decides which)."""
    from npudoctor.knowledge.packages import kernels_chip_of

    found: Dict[str, str] = {}
    if cann_dir and os.path.isdir(cann_dir):
        for name in sorted(os.listdir(cann_dir)):
            chip = kernels_chip_of(name, pkg.version, arch)
            if chip and os.path.isfile(os.path.join(cann_dir, name)):
                found[name] = chip
    supply = (
        "the site snapshot names no NPU chip and this package is chip-specific: collect the snapshot again "
        f"where npu-smi works, or put the {pkg.kind} package of the site's chip ({pkg.filename}) into --cann-dir"
    )
    if len(found) > 1:
        return None, f"--cann-dir holds several ({', '.join(found)}) and the site's chip is unknown; {supply}"
    if not found:
        return None, supply
    name, chip = next(iter(found.items()))
    why = f"{pkg.kind} package for {chip} chips: given in --cann-dir (the site snapshot names no chip)"
    made = PackageFile(pkg.kind, name, pkg.url, pkg.version, why, False, pkg.install_args)
    return made, chip


def make_bundle(
    plan: Plan,
    site: Site,
    opts: BundleOptions,
    log: Callable[[str], None] = print,
    wheels: Optional[Sequence[Wheel]] = None,
) -> BundleResult:
    """Download and write the whole bundle into ``opts.output`` (``wheels``: already
    resolved with :func:`resolve_plan_wheels`, else resolved here).  Raises
    :class:`BundleError` (pip failure, bad .run file) or ``OSError`` (disk)."""
    out = opts.output
    os.makedirs(out, exist_ok=True)
    if wheels is None:
        wheels = resolve_plan_wheels(plan, site, opts)
    progress = progress_bar(opts.progress)
    with progress if progress is not None else contextlib.nullcontext():
        downloaded, kept = download_wheels(plan, opts, wheels, log, progress)
        cann_files, pending, cann_kept = gather_cann(plan, opts, log, progress)
    kept += cann_kept
    wheels_dir = os.path.join(out, "wheels")
    wheel_paths = {n: os.path.join(wheels_dir, n) for n in sorted(os.listdir(wheels_dir)) if n.endswith(".whl")}
    why = _why_wheels(plan, wheel_paths)
    files: List[Dict[str, Any]] = []
    for name, path in wheel_paths.items():
        files.append(
            {
                "path": f"wheels/{name}",
                "size": os.path.getsize(path),
                "sha256": sha256_file(path),
                "kind": "wheel",
                "why": why.get(name, ""),
            }
        )
    for pkg, rel, digest in cann_files:
        files.append(
            {
                "path": rel,
                "size": os.path.getsize(os.path.join(out, rel)),
                "sha256": digest,
                "kind": pkg.kind,
                "why": pkg.why,
                "version": pkg.version,
                "url": pkg.url,
            }
        )
    _write(os.path.join(out, REQUIREMENTS), requirements_text(plan, files))
    _write(os.path.join(out, "install.sh"), install_sh(plan, site, cann_files, pending), 0o755)
    _write(os.path.join(out, "INSTALL.md"), install_md(plan, site, cann_files, pending))
    scripts = [
        (REQUIREMENTS, "hash-pinned requirements: pip install --no-index --require-hashes"),
        ("install.sh", "offline installer"),
        ("INSTALL.md", "instructions for humans"),
    ]
    if opts.site_file:
        dest = os.path.join(out, SITE)
        if not (os.path.exists(dest) and os.path.samefile(opts.site_file, dest)):
            shutil.copyfile(opts.site_file, dest)
            os.chmod(dest, 0o644)
        scripts.append((SITE, "the site snapshot this plan was made for (plan verify --for site.json)"))
    for rel, why_text in scripts:
        path = os.path.join(out, rel)
        files.append(
            {"path": rel, "size": os.path.getsize(path), "sha256": sha256_file(path), "kind": "script", "why": why_text}
        )
    sums = "".join(f"{f['sha256']}  {f['path']}\n" for f in files)
    _write(os.path.join(out, SUMS), sums)
    from npudoctor import __version__

    manifest = {
        "schema_version": 1,
        "created": now_iso(),
        "npudoctor_version": __version__,
        "site": site.summary(),
        "target": {"python": plan.python, "arch": plan.arch, "glibc": plan.glibc, "implementation": "cp"},
        "plan": plan.to_dict(),
        "files": files,
        "pending": pending,
    }
    _write(os.path.join(out, MANIFEST), json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return BundleResult(out, files, kept, downloaded, pending, os.path.join(out, MANIFEST))


def _write(path: str, text: str, mode: int = 0o644) -> None:
    """Atomic write, then the permissions a bundle file needs (mkstemp makes 0600)."""
    atomic_write(path, text)
    os.chmod(path, mode)
