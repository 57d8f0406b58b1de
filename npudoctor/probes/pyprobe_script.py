"""Interpreter facts, gathered INSIDE the target interpreter (stdlib only).

npudoctor runs this file's source with ``<python> -c <source>`` for ``--python PATH``
(and calls :func:`collect` in-process for the live interpreter).  It must run on every
interpreter a user may point at: CPython 3.7 … 3.13 (tested), and it avoids syntax newer
than Python 2.7 so that even a stray 2.7/3.6 interpreter answers with its version instead
of a SyntaxError.  It imports nothing outside the standard library and never imports
torch, torch_npu or any site package.

Output (``--python`` mode): one line ``NPUDOCTOR-PYPROBE-JSON:<json>`` on stdout, so that
noise printed by ``.pth`` files or ``sitecustomize`` does not break parsing.  Keys::

    version        "3.10.12"            platform.python_version() (read from sys.version)
    version_info   [3, 10, 12]          sys.version_info[:3]
    releaselevel   "final"
    implementation "cpython"            sys.implementation.name
    machine        "x86_64"|"aarch64"   platform.machine() (os.uname()'s machine)
    bits           64                   pointer size
    executable     sys.executable
    prefix, base_prefix, exec_prefix
    is_venv        bool                 prefix != base_prefix (or virtualenv<20 real_prefix)
    conda_prefix   sys.prefix when it holds conda-meta/, else None
    conda_env      "base" | env directory name | None
    site_packages  site.getsitepackages() (sysconfig purelib/platlib when missing)
    user_site      site.getusersitepackages() or None
    user_site_enabled  site.ENABLE_USER_SITE (bool or None)
    sys_path       sys.path as the interpreter has it ("" = current directory)
    glibc          "2.31" | None        os.confstr("CS_GNU_LIBC_VERSION")
    soabi          "cpython-310-x86_64-linux-gnu" | None
    cwd            os.getcwd()

The script imports neither ``json`` nor ``platform`` unless it must: they import ``re``
and ``enum``, which were most of the script's run (``check --python`` waits for it).  The
JSON line is written by :func:`dumps` with the standard library's own string encoder.
"""

import os
import site
import struct
import sys
import sysconfig

# Types are in comments, and the typing names imported for type checkers only (mypy reads
# MYPY as true): the module must also run where there is no typing module (Python 2.7).
MYPY = False
if MYPY:
    from typing import Any, Callable, Dict, List, Optional, Tuple  # noqa: F401 (used in type comments)

MARK = "NPUDOCTOR-PYPROBE-JSON:"


def _c_quote():
    # type: () -> Optional[Callable[[str], str]]
    """The C string encoder of ``json`` (``None`` on an interpreter without it)."""
    try:
        from _json import encode_basestring_ascii
    except ImportError:
        return None
    return encode_basestring_ascii


_quote = _c_quote()


def _glibc():
    # type: () -> Optional[str]
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        text = ""
    parts = text.split()
    if len(parts) == 2 and parts[0] == "glibc":
        return parts[1]
    try:
        import platform

        lib, ver = platform.libc_ver()
    except Exception:
        return None
    return ver if lib == "glibc" and ver else None


def _site_packages():
    # type: () -> List[str]
    getter = getattr(site, "getsitepackages", None)
    out = []  # type: List[str]
    if getter is not None:
        try:
            out = list(getter())
        except Exception:
            out = []
    if not out:
        for key in ("purelib", "platlib"):
            try:
                path = sysconfig.get_paths()[key]
            except Exception:
                continue
            if path not in out:
                out.append(path)
    return out


def _user_site():
    # type: () -> Optional[str]
    getter = getattr(site, "getusersitepackages", None)
    if getter is None:
        return None
    try:
        path = getter()
    except Exception:
        return None
    return path if isinstance(path, str) else None


def _version():
    # type: () -> str
    """``platform.python_version()``: the first word of ``sys.version`` (its leading run
    of letters, digits, ``_``, ``.`` and ``+``), with a patch level added when it has none.
    Where ``platform`` cannot parse ``sys.version`` (a build's own spelling of the rest of
    it), this still answers with the version its first word gives."""
    words = sys.version.split()
    head = words[0] if words else ""
    end = 0
    while end < len(head) and (head[end].isalnum() or head[end] in "_.+"):
        end += 1
    word = head[:end]
    if not word[:1].isdigit():
        import platform

        return platform.python_version()
    parts = word.split(".")
    if len(parts) == 2:
        parts.append("0")
    return ".".join(parts)


def _machine():
    # type: () -> str
    """``platform.machine()``: the machine field of ``os.uname()``."""
    if not hasattr(os, "uname"):
        import platform

        return platform.machine()
    return os.uname()[4]


def _implementation():
    # type: () -> str
    impl = getattr(sys, "implementation", None)
    if impl is not None:
        return str(impl.name)
    import platform

    return platform.python_implementation().lower()


def _conda(prefix):
    # type: (str) -> Tuple[Optional[str], Optional[str]]
    if not os.path.isdir(os.path.join(prefix, "conda-meta")):
        return None, None
    parent = os.path.dirname(os.path.normpath(prefix))
    if os.path.basename(parent) == "envs":
        return prefix, os.path.basename(os.path.normpath(prefix))
    return prefix, "base"


def collect():
    # type: () -> Dict[str, Any]
    """Facts about the running interpreter (a JSON-ready dict, keys in the module doc)."""
    info = sys.version_info
    base_prefix = getattr(sys, "base_prefix", None) or getattr(sys, "real_prefix", None) or sys.prefix
    real_prefix = getattr(sys, "real_prefix", None)
    conda_prefix, conda_env = _conda(sys.prefix)
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    try:
        soabi = sysconfig.get_config_var("SOABI")
    except Exception:
        soabi = None
    return {
        "version": _version(),
        "version_info": [info[0], info[1], info[2]],
        "releaselevel": info[3],
        "implementation": _implementation(),
        "machine": _machine() or None,
        "bits": struct.calcsize("P") * 8,
        "executable": sys.executable or None,
        "prefix": sys.prefix,
        "base_prefix": base_prefix,
        "exec_prefix": sys.exec_prefix,
        "is_venv": bool(real_prefix) or os.path.normpath(sys.prefix) != os.path.normpath(base_prefix),
        "conda_prefix": conda_prefix,
        "conda_env": conda_env,
        "site_packages": _site_packages(),
        "user_site": _user_site(),
        "user_site_enabled": getattr(site, "ENABLE_USER_SITE", None),
        "sys_path": list(sys.path),
        "glibc": _glibc(),
        "soabi": soabi,
        "cwd": cwd,
    }


def _encode(value, quote):
    # type: (Any, Callable[[str], str]) -> str
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_encode(item, quote) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(quote(key) + ": " + _encode(item, quote) for key, item in value.items()) + "}"
    return quote(value)  # a str; anything else raises TypeError


def dumps(value):
    # type: (Any) -> str
    """``json.dumps(value)``, the same text, for the values :func:`collect` returns (None,
    bools, ints, strings, lists and dicts with string keys); ``json.dumps`` itself for
    anything else or where the C encoder is missing."""
    if _quote is not None:
        try:
            return _encode(value, _quote)
        except TypeError:
            pass
    import json

    return json.dumps(value)


def main():
    # type: () -> None
    try:
        facts = collect()
    except Exception as exc:  # report, never die silently
        facts = {"error": type(exc).__name__ + ": " + str(exc)}
    try:
        line = dumps(facts)
    except Exception as exc:  # Python 2: a byte string that is not UTF-8 (in sys.path, say)
        line = dumps({"error": "the facts could not be written as JSON: " + type(exc).__name__})
    sys.stdout.write(MARK + line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
