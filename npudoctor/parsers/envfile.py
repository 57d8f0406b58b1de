"""Parser of environment files: ``KEY=VALUE`` lines as ``docker run --env-file`` reads
them and ``env`` / ``docker inspect`` print them (``export KEY=VALUE`` and quoted values
are accepted too, so ``npudoctor env`` output reads back)."""

from __future__ import annotations

import shlex
from typing import Dict, List, Tuple

from npudoctor import lazyre
from npudoctor.host import read_capped_text

_NAME = lazyre.pattern(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_env_file(text: str) -> Tuple[Dict[str, str], List[str]]:
    """``(variables, problems)`` from the text of an environment file.

    Blank lines and ``#`` comments are skipped; ``export`` prefixes are dropped; a value
    in single or double quotes is unquoted the way a POSIX shell would.  A line without
    ``=`` or with a name that is not a shell identifier is reported in ``problems``
    (``"line 3: ..."``) and skipped, as is a line holding a NUL byte (no process
    environment can hold one: ``execve`` takes NUL-terminated strings).  Never raises.
    """
    env: Dict[str, str] = {}
    problems: List[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "\0" in line:
            problems.append(f"line {number}: a NUL byte (no environment variable can hold one)")
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not _NAME.match(name):
            problems.append(f"line {number}: not NAME=value: {raw[:80]}")
            continue
        if value[:1] in ("'", '"'):
            try:
                parts = shlex.split(value, posix=True)
                value = parts[0] if len(parts) == 1 else value
            except ValueError:
                problems.append(f"line {number}: unbalanced quotes in {name}")
                continue
        env[name] = value
    return env, problems


def load_env_file(path: str, default_path: str) -> Dict[str, str]:
    """Read and parse an ``--env-file``; ``PATH`` defaults to ``default_path`` when the
    file does not set it.  Raises ``ValueError`` naming the file for an unreadable file
    or malformed lines (the callers turn it into a usage error or "unhealthy")."""
    try:
        text = read_capped_text(path, 1 << 20, what="--env-file", pipes=True)
    except OSError as exc:
        raise ValueError(f"--env-file {path}: {exc.strerror or exc}") from None
    env, problems = parse_env_file(text)
    if problems:
        raise ValueError(f"--env-file {path}: " + "; ".join(problems[:3]))
    env.setdefault("PATH", default_path)
    return env
