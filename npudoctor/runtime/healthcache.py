"""``npudoctor health --cache-ttl``/``--fallback-ttl``: the last finished verdict kept in
a file and read back only when it is this user's own and every printed field is a
printable string."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from npudoctor.hostio import read_capped_text
from npudoctor.runtime.printable import printable, verdict_problem

if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

#: The budget a cached verdict is keyed with (health's default: see cache_path).
_KEY_TIMEOUT = 0.9


#: Variables that choose the Python judged without ``--python`` (part of the cache key).
ACTIVE_ENV_VARS = ("VIRTUAL_ENV", "CONDA_PREFIX")


def state_dir() -> str:
    """Where health keeps its ``--cache-ttl``/``--fallback-ttl`` results:
    ``$XDG_RUNTIME_DIR``, else ``$TMPDIR``, else ``/tmp``."""
    return os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"


def cache_path(options: Any) -> str:
    """The ``--cache-ttl`` file of a run with ``options`` (a
    :class:`npudoctor.runtime.healthopts.HealthOptions`): one verdict for every budget,
    cache policy and verbosity (they do not change what is judged)."""
    from npudoctor.digest import sha256_hex

    base = state_dir()
    # the budget and the cache policies do not change what is judged: one verdict for all
    import msgspec

    from npudoctor.record import replace

    judged = replace(options, timeout=_KEY_TIMEOUT, cache_ttl=0.0, fallback_ttl=0.0, verbose=False)
    what = msgspec.to_builtins(judged)
    # without --python the active virtualenv / conda environment is judged: another one is
    # another verdict (pyselect.default_choice)
    what["active_env"] = [os.environ.get(name, "") for name in ACTIVE_ENV_VARS]
    key = sha256_hex(json.dumps(what, sort_keys=True).encode())[:16]
    return os.path.join(base, f"npudoctor-health-{os.getuid()}-{key}.json")


def read_cache(path: str, ttl: float) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The cached verdict at ``path`` if younger than ``ttl`` seconds, and a note when a
    cached file was there but refused (``(None, None)``: nothing usable and nothing to say).

    Read through the Host's capped reader and :func:`npudoctor.parsers.jsontext.loads`
    (deep nesting and numbers over 100 digits are a clear error, not a RecursionError);
    a file of another owner or writable by others is not trusted; an entry that is not a
    printable string (ANSI escapes, control characters, another type) refuses the whole
    file (:func:`~npudoctor.runtime.printable.verdict_problem`), so nothing of it is echoed."""
    from npudoctor.parsers.jsontext import loads

    try:
        st = os.stat(path)
    except OSError:
        return None, None
    age = time.time() - st.st_mtime
    if age > ttl or age < 0:
        return None, None
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        # planted or writable by others: not our result, do not trust it
        return None, f"cached result ignored: {path} is not this user's own file"
    try:
        doc = loads(read_capped_text(path, 1 << 20, what="health cache"))
    except json.JSONDecodeError as exc:
        return None, printable(f"cached result ignored: {path}: not valid JSON ({exc.msg})")
    except (OSError, ValueError) as exc:
        return None, printable(f"cached result ignored: {path}: cannot read it ({exc})")
    problem = verdict_problem(doc)
    if problem:
        return None, printable(f"cached result ignored: {path}: {problem}")
    doc["cache_age_s"] = round(age, 1)
    return doc, None
