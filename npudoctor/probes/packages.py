"""Installed Python distributions of the target interpreter, from metadata only.

Section ``packages`` (QUICK).  Every ``*.dist-info`` and ``*.egg-info`` in
the directories of ``facts["python"]["sys_path"]`` (in import order; the working
directory is left out -- shadowing is judged by the python probe) is read through the
Host: ``METADATA``/``PKG-INFO`` headers, ``WHEEL``, ``INSTALLER``, ``requires.txt``;
``direct_url.json`` for the packages of interest.  Nothing is imported.  Directories
reached twice (``lib64 -> lib``) are scanned once.

Keys::

    installed   {canonical name: [record, ...]}  records in sys.path order; the first
                one is what ``import`` / ``importlib.metadata`` would see
    duplicates  [{"name", "versions": [..], "dist_infos": [..], "locations": [..]}]
                names with more than one record (two dist-infos in one site dir, or
                user site vs env)
    modules     {import name: dir of the first sys.path entry holding it, or None}
                for the CANN Python dependencies and numpy (packages installed without
                metadata, e.g. by copying, still count)
    scanned     [dirs scanned]
    count       number of records
    errors      [strings] unreadable/garbled metadata (each record also says so)
    indexed_only  number of records built from the directory name alone: a directory with
                more than FULL_READ_LIMIT distributions (any, in a quick run: health) is
                indexed by name once, and only
                the distributions rules judge by name (INTEREST, the CANN Python
                dependencies) have their METADATA read (100k dist-infos stay a fast check)
    pip_config  where pip would download from (kind K09): {"index_url", "index_source",
                "extra_index_urls": [..], "files": [pip.conf files read], "errors": [..]}.
                Order as pip's: global files (/etc/pip.conf, /etc/xdg/pip/pip.conf), user
                files (~/.pip/pip.conf, ~/.config/pip/pip.conf), the env's own pip.conf
                (venv/conda prefix), PIP_CONFIG_FILE, then PIP_INDEX_URL /
                PIP_EXTRA_INDEX_URL; later ones win.  [global] and [install] sections.

Record (a dict)::

    name          "torch_npu"  (the Name: header; the directory name when unreadable)
    version       "2.1.0.post10" | "2.1.0+cpu" | None
    location      the site dir holding it
    dist_info     full path of the .dist-info/.egg-info
    kind          "dist-info" | "egg-info"
    metadata      path of the METADATA/PKG-INFO file read
    requires_dist ["torch==2.1.0+cpu", ...]   (egg-info: converted from requires.txt)
    requires_python  ">=3.8" | None
    wheel_tags    ["cp310-cp310-manylinux_2_17_aarch64", ...] (empty when not from a wheel)
    installer     "pip" | "conda" | "uv" | None
    user_site     bool (location is the interpreter's user site)
    editable      bool (PEP 660 / direct_url.json dir_info.editable)
    metadata_error  None | "not found" | "garbled: no Name/Version" | ...
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.knowledge.versions import malformed_version
from npudoctor.parsers import jsontext
from npudoctor.parsers.metadata import (
    canonical_name,
    parse_metadata,
    parse_requires_txt,
    parse_wheel,
    split_dist_dir,
)

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

SECTION = "packages"
NEEDS = ("python",)
QUICK = True

#: Metadata headers are at the top of METADATA; the long description after them is not
#: needed, so reads stop here (bytes).
METADATA_LIMIT = 256 << 10

#: Distributions whose direct_url.json is read (editable/VCS installs of the stack).
INTEREST = frozenset(
    {"torch", "torch-npu", "torchvision", "torchaudio", "numpy", "vllm", "vllm-ascend", "mindie-turbo", "mindie"}
)

#: Import names checked on disk: CANN Python dependencies (CANN install guides / kind K06) and
#: numpy.  Keys are import names, values the pip distribution names.
MODULES = {
    "numpy": "numpy",
    "decorator": "decorator",
    "attr": "attrs",
    "psutil": "psutil",
    "absl": "absl-py",
    "cloudpickle": "cloudpickle",
    "ml_dtypes": "ml-dtypes",
    "scipy": "scipy",
    "tornado": "tornado",
    "sympy": "sympy",
    "cffi": "cffi",
    "google/protobuf": "protobuf",
    "yaml": "pyyaml",
    "te": "te",
    "tbe": "te",
}

#: Other projects rules look up by name: the frameworks of the chip-support data
#: (rules/chips.py ``_frameworks``, DEV040), of the framework tables
#: (rules/framework_tables.py) and those linking NNAL's libatb.so
#: (rules/_cannfacts.py ``_NEEDS_NNAL``).  tests/test_devices_packages.py checks that every
#: name the devices rules ask for is read in full.
JUDGED = frozenset(
    {"mindspeed", "mindspeed-llm", "torchair", "triton-ascend", "mindie-llm", "deepspeed", "lmdeploy", "sglang"}
)

#: Projects rules judge by name: their METADATA is always read.
_BY_NAME = frozenset(INTEREST | JUDGED | {canonical_name(n) for n in MODULES.values()})


def _metadata_header(text: str) -> str:
    end = text.find("\n\n")
    return text if end < 0 else text[:end]


#: More distributions than this in one directory: only those judged by name are read.
FULL_READ_LIMIT = 2000


def _index(entry: str) -> Tuple[str, Optional[str], str]:
    """``(name, version, canonical name)`` of a ``*.dist-info``/``*.egg-info`` directory name."""
    name, version = split_dist_dir(entry)
    name = name or entry
    return name, version, canonical_name(name)


def indexed_record(
    location: str, entry: str, name: Optional[str], version: Optional[str], user_site: bool
) -> Dict[str, Any]:
    """A record from the directory name alone (``pkg-1.0.dist-info``): nothing read."""
    return {
        "name": name,
        "version": version,
        "location": location,
        "dist_info": location + entry if location.endswith("/") else f"{location}/{entry}",  # = posixpath.join, cheaper
        "kind": "dist-info" if entry.endswith(".dist-info") else "egg-info",
        "metadata": None,
        "requires_dist": [],
        "requires_python": None,
        "wheel_tags": [],
        "installer": None,
        "user_site": user_site,
        "editable": False,
        "metadata_error": None,
    }


def read_record(host: Host, location: str, entry: str, user_site: bool) -> Dict[str, Any]:
    """One record (see the module docstring) for ``<location>/<entry>``."""
    path = posixpath.join(location, entry)
    dir_name, dir_version = split_dist_dir(entry)
    rec = indexed_record(location, entry, dir_name, dir_version, user_site)
    del rec["metadata"]  # set below when a METADATA/PKG-INFO file is read
    kind = rec["kind"]
    is_dir = host.is_dir(path)
    if kind == "dist-info":
        meta_path = posixpath.join(path, "METADATA")
    else:
        meta_path = posixpath.join(path, "PKG-INFO") if is_dir else path
    rec["metadata"] = meta_path
    read = host.read_text(meta_path, limit=METADATA_LIMIT)
    if not read.ok:
        rec["metadata_error"] = f"{meta_path}: {read.error}"
    else:
        meta = parse_metadata(_metadata_header(read.text or ""))
        if not meta["valid"]:
            rec["metadata_error"] = f"{meta_path}: garbled (no Name/Version header)"
        rec["name"] = meta["name"] or rec["name"]
        rec["version"] = meta["version"] or rec["version"]
        rec["requires_dist"] = meta["requires_dist"]
        rec["requires_python"] = meta["requires_python"]
        if read.lossy:
            rec["metadata_error"] = rec["metadata_error"] or f"{meta_path}: not valid UTF-8 (bad bytes replaced)"
    bad = malformed_version(rec["version"])
    if bad is not None:  # never handed on: packaging and int() would fail on it
        rec["metadata_error"] = f"{meta_path}: Version {rec['version'][:40]}… is malformed ({bad})"
        rec["version"] = None
    if not is_dir:
        return rec
    if kind == "egg-info":
        req = host.read_text(posixpath.join(path, "requires.txt"), limit=METADATA_LIMIT)
        if req.ok and not rec["requires_dist"]:
            rec["requires_dist"] = parse_requires_txt(req.text or "")
        return rec
    wheel = host.read_text(posixpath.join(path, "WHEEL"), limit=64 << 10)
    if wheel.ok:
        rec["wheel_tags"] = parse_wheel(wheel.text or "")["tags"]
    installer = host.read_text(posixpath.join(path, "INSTALLER"), limit=4096)
    if installer.ok:
        rec["installer"] = (
            (installer.text or "").strip().splitlines()[0][:80] if (installer.text or "").strip() else None
        )
    if rec["name"] and canonical_name(rec["name"]) in INTEREST:
        direct = host.read_text(posixpath.join(path, "direct_url.json"), limit=64 << 10)
        if direct.ok:
            try:
                data = jsontext.loads(direct.text or "")
                rec["editable"] = bool((data.get("dir_info") or {}).get("editable"))
                rec["direct_url"] = data.get("url")
            except (ValueError, AttributeError):
                pass
    return rec


def scan(
    host: Host, paths: List[str], user_site: Optional[str] = None, full_read_limit: int = FULL_READ_LIMIT
) -> Dict[str, Any]:
    """Scan ``paths`` (directories of the diagnosed machine, in import order) and
    return the section dict.  A directory with more than ``full_read_limit``
    distributions has only those judged by name read (the rest indexed by directory
    name; 0: always so, as ``health`` does).  Never raises."""
    installed: Dict[str, List[Dict[str, Any]]] = {}
    modules: Dict[str, Optional[str]] = dict.fromkeys(MODULES)
    scanned: List[str] = []
    errors: List[str] = []
    seen = set()
    user_key = host.resolve(user_site) if user_site else None
    count = indexed = 0
    for path in paths:
        if not path or not path.startswith("/"):
            continue
        key = host.resolve(path)
        if key in seen:
            continue
        seen.add(key)
        entries = host.listdir(path)
        if not entries:
            continue
        scanned.append(path)
        names = set(entries)
        so_heads = {e.split(".", 1)[0] for e in entries if e.endswith(".so")}  # "psutil._psutil_linux...so"
        for mod, found in modules.items():
            if found is not None:
                continue
            head, _, tail = mod.partition("/")
            if tail:
                hit = head in names and host.is_dir(posixpath.join(path, mod))
            else:
                hit = mod in names or f"{mod}.py" in names or mod in so_heads
            if hit:
                modules[mod] = path
        is_user = user_key is not None and key == user_key
        dists = [e for e in entries if e.endswith((".dist-info", ".egg-info"))]
        lazy: List[Tuple[str, str, Optional[str], str]] = []
        if len(dists) > full_read_limit:
            named = [(e, *_index(e)) for e in dists]
            lazy = [item for item in named if item[3] not in _BY_NAME]
            dists = [item[0] for item in named if item[3] in _BY_NAME]
        for entry in dists:
            rec = read_record(host, path, entry, is_user)
            if not rec["name"]:
                errors.append(f"{rec['dist_info']}: no project name")
                continue
            if rec["metadata_error"]:
                errors.append(rec["metadata_error"])
            installed.setdefault(canonical_name(rec["name"]), []).append(rec)
            count += 1
        for entry, name, version, canonical in lazy:
            rec = indexed_record(path, entry, name, version, is_user)
            installed.setdefault(canonical, []).append(rec)
            count += 1
            indexed += 1
    duplicates = [
        {
            "name": name,
            "versions": [r["version"] for r in recs],
            "dist_infos": [r["dist_info"] for r in recs],
            "locations": [r["location"] for r in recs],
        }
        for name, recs in sorted(installed.items())
        if len(recs) > 1
    ]
    return {
        "installed": dict(sorted(installed.items())),
        "duplicates": duplicates,
        "modules": {k.replace("/", "."): v for k, v in modules.items()},
        "scanned": scanned,
        "count": count,
        "errors": errors,
        "indexed_only": indexed,
    }


def _pip_conf(text: str) -> Dict[str, Any]:
    """``{"index-url": str | None, "extra-index-url": [..]}`` of one pip.conf (INI;
    [install] overrides [global], as in pip).  Raises ``ValueError`` on garbled text."""
    import configparser

    cp = configparser.RawConfigParser(strict=False)
    try:
        cp.read_string(text)
    except configparser.Error as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    out: Dict[str, Any] = {"index-url": None, "extra-index-url": []}
    for section in ("global", "install"):
        if not cp.has_section(section):
            continue
        if cp.has_option(section, "index-url"):
            out["index-url"] = cp.get(section, "index-url").strip() or None
        if cp.has_option(section, "extra-index-url"):
            out["extra-index-url"] = cp.get(section, "extra-index-url").split()
    return out


def pip_config(host: Host, python: Dict[str, Any]) -> Dict[str, Any]:
    """Where ``pip install`` in the target interpreter would look for wheels (see the
    module docstring, key ``pip_config``).  Source: pip's configuration documentation
    (file locations and precedence; environment variables override files)."""
    home = host.getenv("HOME") or "/root"
    prefix = python.get("conda_prefix") or python.get("prefix")
    files = ["/etc/pip.conf", "/etc/xdg/pip/pip.conf", f"{home}/.pip/pip.conf", f"{home}/.config/pip/pip.conf"]
    if prefix:
        files.append(posixpath.join(str(prefix), "pip.conf"))
    if host.getenv("PIP_CONFIG_FILE"):
        files.append(str(host.getenv("PIP_CONFIG_FILE")))
    out: Dict[str, Any] = {"index_url": None, "index_source": None, "extra_index_urls": [], "files": [], "errors": []}
    for path in files:
        read = host.read_text(path, limit=256 << 10)
        if read.text is None:
            continue
        out["files"].append(path)
        try:
            conf = _pip_conf(read.text)
        except ValueError as exc:
            out["errors"].append(f"{path}: garbled ({exc})")
            continue
        if conf["index-url"]:
            out["index_url"], out["index_source"] = conf["index-url"], path
        if conf["extra-index-url"]:
            out["extra_index_urls"] = list(conf["extra-index-url"])
    env_index = (host.getenv("PIP_INDEX_URL") or "").strip()
    if env_index:
        out["index_url"], out["index_source"] = env_index, "PIP_INDEX_URL"
    env_extra = (host.getenv("PIP_EXTRA_INDEX_URL") or "").split()
    if env_extra:
        out["extra_index_urls"] = env_extra
    return out


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    python = ctx.facts.get("python") or {}
    if not isinstance(python, dict) or python.get("error") or not python.get("sys_path"):
        return {
            "installed": {},
            "duplicates": [],
            "modules": {},
            "scanned": [],
            "count": 0,
            "errors": [],
            "skipped": "no interpreter to inspect" + (f": {python.get('error')}" if python.get("error") else ""),
        }
    cwd = python.get("cwd")
    paths = [p for p in python.get("sys_path") or [] if isinstance(p, str) and p and p != cwd]
    # health (quick) and devices (index_packages) read the metadata of the distributions
    # judged by name only: their time must not grow with the number installed;
    # check reads them all
    limit = 0 if ctx.options.quick or ctx.options.index_packages else FULL_READ_LIMIT
    result = scan(ctx.host, paths, python.get("user_site"), limit)
    result["interpreter"] = python.get("executable")
    try:
        result["pip_config"] = pip_config(ctx.host, python)
    except Exception as exc:  # odd files must not cost the package facts
        result["pip_config"] = {"errors": [f"pip configuration not read: {exc}"]}
    return result
