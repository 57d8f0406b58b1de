"""npudoctor's per-user directories (cache, config), as ``platformdirs`` names them.

Every ``health`` run asks for both (is there a refreshed matrix in the cache? a config file
silencing codes?), and importing platformdirs (pathlib, tempfile, its platform classes)
was a tenth of a health run (docs/performance.md).  So the common Linux
case is answered here: no ``$XDG_CACHE_HOME`` / ``$XDG_CONFIG_HOME`` and an absolute
``$HOME`` give ``$HOME/.cache/npudoctor`` and ``$HOME/.config/npudoctor``, which is what
every platformdirs release since 2.5 (the floor in pyproject.toml) answers there (its Unix
class: the XDG variable if set, else ``~/.cache`` or ``~/.config``, then the app name;
``ensure_exists`` off, nothing is created).  Anything else (an XDG variable set, no or a
relative ``$HOME``, Android, macOS, Windows) is platformdirs' own answer.
``tests/test_userdirs.py`` checks that both agree.
"""

from __future__ import annotations

import os
import sys

APP = "npudoctor"


def _common_linux(xdg_variable: str) -> bool:
    """Whether the fast answer applies: Linux (not Android), ``xdg_variable`` unset or
    empty, ``$HOME`` absolute."""
    return (
        sys.platform == "linux"
        and os.environ.get("HOME", "").startswith("/")
        and not os.environ.get(xdg_variable)
        and "ANDROID_DATA" not in os.environ
        and not hasattr(sys, "getandroidapilevel")
    )


def user_cache_dir() -> str:
    """``platformdirs.user_cache_dir("npudoctor", appauthor=False)``: the user cache
    directory (``~/.cache/npudoctor`` on Linux).  It need not exist; nothing is created."""
    if _common_linux("XDG_CACHE_HOME"):
        return os.path.join(os.path.expanduser("~/.cache"), APP)
    import platformdirs

    return platformdirs.user_cache_dir(APP, appauthor=False)


def user_config_dir() -> str:
    """``platformdirs.user_config_dir("npudoctor", appauthor=False)``: the user config
    directory (``~/.config/npudoctor`` on Linux).  It need not exist; nothing is created."""
    if _common_linux("XDG_CONFIG_HOME"):
        return os.path.join(os.path.expanduser("~/.config"), APP)
    import platformdirs

    return platformdirs.user_config_dir(APP, appauthor=False)
