"""torch's C++ ABI (``torch.compiled_with_cxx11_abi()``) from the bytes of its ``libc10.so``.

libstdc++ has two ABIs for ``std::string``: the old one (``_GLIBCXX_USE_CXX11_ABI=0``,
mangled ``Ss``) and the C++11 one (``=1``, ``std::__cxx11::basic_string``, mangled
``NSt7__cxx1112basic_string…E``).  torch's own functions that take a ``std::string``
show which one torch was built with.  The function read is c10's
``c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)``
(every ``TORCH_CHECK`` failure goes through it; libc10.so defines and exports it):

* ``_ZN3c106detail14torchCheckFailEPKcS2_jRKSs`` — old ABI (torch 2.5.1 aarch64 from PyPI);
* ``_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_string…`` — C++11 ABI
  (torch 2.6.0 aarch64 from PyPI).

"``__cxx11`` somewhere in libc10.so" says nothing: every real libc10.so, the old-ABI ones
included, also exports libstdc++'s own ``std::__cxx11`` names (``_ZNSt…``, built in with
libstdc++'s C++11 ``std::string``).  When ``torchCheckFail`` is absent, other c10 names
(``_ZN3c10…``/``_ZNK3c10…``) taking a ``std::string`` decide, and the result is ``None``
when none does.  Names are looked up in the file's string tables (NUL-terminated); the
file is never executed.  See ``tests/fixtures/elf/README.md`` for the real files.
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

from npudoctor import lazyre

TORCH_CHECK_FAIL_OLD = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"
TORCH_CHECK_FAIL_CXX11 = "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"

#: A c10-namespace name (after a NUL) that mentions the C++11 std::string / the old one.
_C10_CXX11 = lazyre.pattern(rb"\0(_ZNK?3c10[^\0]{0,400}?NSt7__cxx1112basic_string[^\0]*)\0")
_C10_OLD = lazyre.pattern(rb"\0(_ZNK?3c10[^\0]{0,400}?(?:RKSs|ESs|Ss[EJ])[^\0]*)\0")


def torch_cxx11_abi(data: bytes) -> Tuple[Optional[bool], Optional[str]]:
    """``(cxx11, symbol)`` from the bytes of ``torch/lib/libc10.so``.

    ``cxx11``: ``True`` (C++11 ABI, NNAL's ``cxx_abi_1``), ``False`` (old ABI,
    ``cxx_abi_0``) or ``None`` (not an ELF file, or no c10 name taking a ``std::string``);
    ``symbol``: the mangled name that decided, or ``None``.  Never raises.
    """
    if data[:4] != b"\x7fELF":
        return None, None
    if b"\0" + TORCH_CHECK_FAIL_OLD.encode() + b"\0" in data:
        return False, TORCH_CHECK_FAIL_OLD
    if b"\0" + TORCH_CHECK_FAIL_CXX11.encode() + b"\0" in data:
        return True, TORCH_CHECK_FAIL_CXX11
    m = _C10_CXX11.search(data)
    if m:
        return True, m.group(1).decode("ascii", "replace")
    m = _C10_OLD.search(data)
    if m:
        return False, m.group(1).decode("ascii", "replace")
    return None, None


#: The C++11 ``std::string`` in a mangled name, and the old one (``Ss``, the standard
#: substitution of ``std::basic_string<char>``, only where a type may stand: after a
#: reference/pointer/const qualifier, a template-argument or parameter-list boundary).
_CXX11_STRING = "NSt7__cxx1112basic_string"
_OLD_STRING = lazyre.pattern(r"(?:R|P|K|I|E|j|i|m|b|v|c|S_|_)Ss|^_ZN?K?Ss")
#: Mangled names of the namespaces torch exports (at::, c10::, torch::, c10d::, caffe2::).
TORCH_NAME = lazyre.pattern(r"^_Z(?:T[VIST])?N?K?(?:2at|3c10|5torch|4c10d|6caffe2)(?:[0-9]|[A-Z]|$)")


def module_cxx11_abi(undefined: Iterable[str]) -> Tuple[Optional[bool], Optional[str]]:
    """``(cxx11, symbol)``: the C++ ABI a module was built with, from the torch functions it
    imports (its undefined ``at::``/``c10::``/``torch::`` names) that take or return a
    ``std::string``: ``NSt7__cxx1112basic_string`` is the C++11 ABI, ``Ss`` the old one.
    ``(None, None)`` when no such name says (a module that passes no ``std::string`` across
    torch's interface, or one whose names say both); ``symbol`` is the first name that
    decided.  These are the names ``ld.so`` must find in torch's libraries: a module of
    the other ABI than torch fails there (``undefined symbol: …``)."""
    new: Optional[str] = None
    old: Optional[str] = None
    for name in sorted(undefined):
        if not TORCH_NAME.match(name):
            continue
        if _CXX11_STRING in name:
            new = new or name
        elif "Ss" in name and _OLD_STRING.search(name):  # (every match holds "Ss": most names skip the search)
            old = old or name
    if new and not old:
        return True, new
    if old and not new:
        return False, old
    return None, None
