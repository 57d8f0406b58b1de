"""Write an offline install bundle for a :class:`~npudoctor.plan.resolve.Plan`.

Layout of the bundle directory::

    wheels/            every wheel the target interpreter needs (``pip download`` for the
                       TARGET: --platform/--python-version/--implementation/--abi,
                       --only-binary=:all:)
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
recorded are kept (pip reuses them: "File was already downloaded"), and nothing is ever
half-written under a final name (downloads go to ``.staging/`` or ``*.part`` and are
renamed when complete and checked).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from npudoctor.host import read_capped_text
from npudoctor.plan.bundle_text import MANIFEST, REQUIREMENTS, SUMS, install_md, install_sh, requirements_text
from npudoctor.plan.files import PackageFile
from npudoctor.plan.model import Plan
from npudoctor.plan.site import Site
from npudoctor.plan.transfer import check_run_file, copy_checked, fetch_url, progress_bar, sha256_file
from npudoctor.plan.wheels import platform_tags
from npudoctor.snapshot import atomic_write, now_iso


class BundleError(RuntimeError):
    """The bundle could not be made (pip found no wheel for the target, a copy failed...).
    ``details`` holds the tail of pip's output or the files concerned."""

    def __init__(self, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.details = list(details)


@dataclass
class BundleOptions:
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


@dataclass
class BundleResult:
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


def pip_download_argv(plan: Plan, opts: BundleOptions, dest: str) -> List[str]:
    """The ``pip download`` command for the plan's TARGET interpreter.

    ``--platform`` lists every manylinux tag the site's glibc accepts (pip does not expand
    ``manylinux_2_X`` itself), ``--python-version``/``--implementation cp``/``--abi cpXY``
    select the target's CPython, ``--only-binary=:all:`` is required by pip with these."""
    py = plan.python.replace(".", "")
    argv = list(opts.pip) + ["download", "--dest", dest, "--only-binary=:all:", "--no-input"]
    argv += ["--python-version", plan.python, "--implementation", "cp", "--abi", f"cp{py}"]
    for tag in platform_tags(plan.arch, plan.glibc):
        argv += ["--platform", tag]
    if opts.index_url:
        argv += ["--index-url", opts.index_url]
    extra = list(opts.extra_index_urls)
    torch_index = opts.torch_index_url or plan.torch_index
    if plan.torch_index and torch_index and torch_index not in extra:
        extra.append(torch_index)
    for url in extra:
        argv += ["--extra-index-url", url]
    for link in opts.find_links:
        argv += ["--find-links", link]
    argv += plan.requirements
    return argv


def _parse_saved(output: str, dest: str) -> List[str]:
    """File names pip reported as saved or reused in ``dest``."""
    names = []
    for line in output.splitlines():
        m = re.search(r"(?:Saved|File was already downloaded)\s+(\S+)", line)
        if m:
            names.append(os.path.basename(m.group(1)))
    return names


# --------------------------------------------------------------------------- bundle
def _why_wheels(plan: Plan, wheels: Dict[str, str]) -> Dict[str, str]:
    """Reason per wheel file: the top-level requirement it satisfies, or who requires it."""
    from packaging.requirements import InvalidRequirement, Requirement
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
        except InvalidRequirement:
            continue
        top[project] = reasons.get(project) or (
            f"{req}: CANN {plan.cann} Python dependency" if req in plan.python_deps else f"{req}: torch_npu docs"
        )
    required_by: Dict[str, List[str]] = {}
    for _fname, (name, _v, reqs) in meta.items():
        for r in reqs:
            try:
                parsed = Requirement(r)
            except InvalidRequirement:
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


def download_wheels(plan: Plan, opts: BundleOptions, log: Callable[[str], None]) -> Tuple[List[str], List[str]]:
    """Fetch the wheels into ``<output>/wheels``; returns (downloaded, kept) file names.
    Raises :class:`BundleError` when pip fails (with its last lines)."""
    out = opts.output
    wheels_dir = os.path.join(out, "wheels")
    staging = os.path.join(out, ".staging")
    os.makedirs(wheels_dir, exist_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    previous = load_manifest(out) or {}
    known = {f["path"]: f.get("sha256") for f in previous.get("files", []) if isinstance(f, dict) and "path" in f}
    reused = set()
    for name in os.listdir(wheels_dir):
        path = os.path.join(wheels_dir, name)
        if not name.endswith(".whl") or not os.path.isfile(path):
            continue
        want = known.get(f"wheels/{name}")
        good = sha256_file(path) == want if want else _valid_wheel(path)
        if good:
            try:
                os.link(path, os.path.join(staging, name))
            except OSError:
                shutil.copy2(path, os.path.join(staging, name))
            reused.add(name)
        else:
            log(f"removing {name}: its hash does not match the previous manifest")
            os.unlink(path)
    argv = pip_download_argv(plan, opts, staging)
    log("running: " + " ".join(shlex.quote(a) for a in argv))
    env = dict(opts.env if opts.env is not None else os.environ)
    try:
        proc = subprocess.run(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=opts.timeout,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        raise BundleError(f"pip download did not finish within {opts.timeout:.0f} s") from None
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise BundleError(f"cannot run pip ({' '.join(opts.pip)}): {exc.strerror or exc}") from None
    output = proc.stdout or ""
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = [line for line in output.splitlines() if line.strip()][-12:]
        raise BundleError(
            f"pip could not download the wheels for Python {plan.python} on {plan.arch} "
            f"(glibc {plan.glibc or 'assumed 2.28'}); pip said:",
            tail,
        )
    saved = set(_parse_saved(output, staging))
    names = [n for n in os.listdir(staging) if n.endswith(".whl")]
    needed = [n for n in names if n in saved] if saved else names
    downloaded: List[str] = []
    kept: List[str] = []
    for name in needed:
        src = os.path.join(staging, name)
        if not _valid_wheel(src):
            raise BundleError(f"downloaded wheel {name} is not a valid wheel (truncated?)")
        os.replace(src, os.path.join(wheels_dir, name))
        (kept if name in reused else downloaded).append(name)
    for name in os.listdir(wheels_dir):
        if name.endswith(".whl") and name not in needed:
            log(f"removing {name}: not part of this plan")
            os.unlink(os.path.join(wheels_dir, name))
    shutil.rmtree(staging, ignore_errors=True)
    return sorted(downloaded), sorted(kept)


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
    for pkg in plan.packages:
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


def make_bundle(plan: Plan, site: Site, opts: BundleOptions, log: Callable[[str], None] = print) -> BundleResult:
    """Download and write the whole bundle into ``opts.output``.  Raises
    :class:`BundleError` (pip failure, bad .run file) or ``OSError`` (disk)."""
    out = opts.output
    os.makedirs(out, exist_ok=True)
    downloaded, kept = download_wheels(plan, opts, log)
    progress = progress_bar(opts.progress)
    with progress if progress is not None else contextlib.nullcontext():
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
    for rel, why_text in (
        (REQUIREMENTS, "hash-pinned requirements: pip install --no-index --require-hashes"),
        ("install.sh", "offline installer"),
        ("INSTALL.md", "instructions for humans"),
    ):
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
