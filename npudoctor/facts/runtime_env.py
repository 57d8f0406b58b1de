"""Typed views of the ``libraries`` section (shape documented in
``npudoctor/probes/libraries.py``): the shared objects torch_npu loads and how they resolve.

The other runtime sections have their own modules (``environment``, ``container``,
``hygiene``), so a command defines only the views it reads."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, field

# --- libraries ---------------------------------------------------------------------------


class LibTorchNpu(View):
    version: Optional[str] = None
    location: Optional[str] = None
    package_dir: Optional[str] = None


class LibTorch(View):
    version: Optional[str] = None
    lib_dir: Optional[str] = None


class ElfObject(View):
    """One ELF file read: its dynamic section."""

    path: str = ""
    soname: Optional[str] = None
    needed: Tuple[str, ...] = ()
    rpath: Tuple[str, ...] = ()
    runpath: Tuple[str, ...] = ()
    version_needs: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    """library → the symbol versions needed from it"""
    error: Optional[str] = None


class FoundAt(View):
    """Where a missing library is on disk."""

    path: str = ""
    where: str = ""
    '"selected toolkit", "driver", "NNAL ...", "CANN <version> ..."'
    usable: bool = True
    """the loader could use it (right architecture and class)"""


class Loader(View):
    """The dynamic loader's search path of the diagnosed machine."""

    ld_library_path: Tuple[str, ...] = ()
    cache: JSON = None
    """ld.so.cache: {"path", "format", "entries", "error"}"""
    conf_dirs: Tuple[str, ...] = ()
    default_dirs: Tuple[str, ...] = ()
    hwcaps: Tuple[str, ...] = ()
    """glibc-hwcaps subdirectories searched first in each directory (x86-64-v3, ...)"""


class Resolution(View):
    """How one ``DT_NEEDED`` entry resolves, as ``ld.so`` would."""

    name: str = ""
    needed_by: Tuple[str, ...] = ()
    """the objects whose DT_NEEDED names it"""
    status: Optional[str] = None
    '"found" | "torch" | "missing" | "system-unknown"'
    path: Optional[str] = None
    via: Optional[str] = None
    found_at: Tuple[FoundAt, ...] = ()
    optional: bool = False


class Glibc(View):
    provided: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    providers: Dict[str, Optional[str]] = field(default_factory=dict)
    defined: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    """every symbol version each provider defines"""
    root_has_libc: Optional[bool] = None


class SymbolCheck(View):
    """Undefined symbols of ``object`` against the exports of ``against``."""

    object: Optional[str] = None
    against: Tuple[str, ...] = ()
    checked: Optional[int] = None
    missing_count: Optional[int] = None
    missing: Tuple[str, ...] = ()
    error: Optional[str] = None
    package: Optional[str] = None
    links: Tuple[str, ...] = ()
    unresolved: Tuple[str, ...] = ()
    """an extension's DT_NEEDED entries that do not resolve after import torch_npu"""
    abi: Optional[bool] = None
    """a torch extension's C++11 ABI, from the torch names it imports; None: unknown"""
    abi_symbol: Optional[str] = None
    """the mangled name that decided abi"""


class Symbols(View):
    torch: Optional[SymbolCheck] = None
    atb: Optional[SymbolCheck] = None
    cann: Optional[SymbolCheck] = None
    extensions: Tuple[SymbolCheck, ...] = ()
    torch_extensions: Tuple[SymbolCheck, ...] = ()
    """modules linking torch's libraries, other than torch's and torch_npu's own"""


class StackObject(View):
    """One ELF file of the rest of the NPU stack (toolkit, NNAL, driver, npu-smi) or an
    extension module of the interpreter, with what the loader would say about it."""

    path: str = ""
    where: Optional[str] = None
    '"toolkit lib64" | "toolkit bin" | "NNAL" | "driver" | "npu-smi" | "extension"'
    unresolved: Tuple[str, ...] = ()
    """DT_NEEDED names found on no loader path"""
    version_needs: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    """base-system library → the highest version needed of each family"""
    error: Optional[str] = None
    """why the file is not a loadable ELF file here"""


class Shadowed(View):
    """A library of CANN, NNAL or the driver the loader finds first in another place."""

    name: str = ""
    taken: str = ""
    """the copy the loader takes"""
    via: Optional[str] = None
    """"LD_LIBRARY_PATH" | "ld.so.cache" | "default dirs" | ..."""
    copies: Tuple[str, ...] = ()
    """the owner's files of that name"""
    needed_by: Tuple[str, ...] = ()
    taken_by: Optional[str] = None
    """"<dist> <version>" whose RECORD lists the copy"""


class ElfCacheUse(View):
    """Parsed ELF facts reused from the on-disk cache (hits) or read (misses)."""

    hits: Optional[int] = None
    misses: Optional[int] = None


class Unresolved(View):
    """A DT_NEEDED entry found on no loader path, and the files that need it."""

    name: str = ""
    needed_by: Tuple[str, ...] = ()


class Backend(View):
    """One device backend torch imports itself (entry point of group torch.backends)."""

    name: Optional[str] = None
    value: Optional[str] = None
    'the entry point, "module:attr"'
    dist: Optional[str] = None
    version: Optional[str] = None
    package_dir: Optional[str] = None
    modules: Tuple[str, ...] = ()
    """the package's own native modules, followed"""
    unresolved: Tuple[Unresolved, ...] = ()
    error: Optional[str] = None


class Autoload(View):
    """The backends ``import torch`` imports itself, in the order it does."""

    group: Optional[str] = None
    torch_version: Optional[str] = None
    enabled: Optional[bool] = None
    """whether this torch autoloads in this environment; None: unknown torch version"""
    variable: Optional[str] = None
    """TORCH_DEVICE_BACKEND_AUTOLOAD's value, or None"""
    backends: Tuple[Backend, ...] = ()


class Located(View):
    """Where libraries found on no loader path are on disk after all (a bounded walk)."""

    names: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    """library -> its copies in the usual places; empty: none there"""
    complete: Optional[bool] = None
    """False: the walk stopped early"""


class LibrariesFacts(View):
    """Will torch_npu's binaries load, and do their symbols match?"""

    torch_npu: Optional[LibTorchNpu] = None
    torch: Optional[LibTorch] = None
    torch_cxx11_abi: Optional[bool] = None
    abi_source: Optional[str] = None
    roots: Tuple[str, ...] = ()
    objects: Tuple[ElfObject, ...] = ()
    resolution: Tuple[Resolution, ...] = ()
    missing: Tuple[str, ...] = ()
    loader: Optional[Loader] = None
    glibc: Optional[Glibc] = None
    symbols: Optional[Symbols] = None
    stack: Tuple[StackObject, ...] = ()
    stack_ld_library_path: Tuple[str, ...] = ()
    """LD_LIBRARY_PATH the stack was resolved with: the environment's, then what set_env.sh adds"""
    stack_shadowed: Tuple[Shadowed, ...] = ()
    stack_found_at: Dict[str, Tuple[FoundAt, ...]] = field(default_factory=dict)
    """where the stack's unresolved libraries are on disk"""
    elf_cache: Optional[ElfCacheUse] = None
    atb_plugin: Optional[str] = None
    autoload: Optional[Autoload] = None
    located: Optional[Located] = None
    duration: Optional[float] = None
    errors: Tuple[str, ...] = ()
