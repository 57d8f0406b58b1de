"""The variable model of the static ``set_env.sh`` evaluation
(:mod:`npudoctor.parsers.set_env`): :class:`SetEnvResult`, what sourcing a script would do,
and :class:`State`, the shell's variables, exports and working directory while it is
interpreted."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Mapping, Tuple

from npudoctor.record import MutableRecord, field


class SetEnvResult(MutableRecord):
    """What sourcing a script would do.

    ``variables``: final values of every variable the script assigned (name → value);
    ``exported``: names the script exported, in first-export order (only these reach
    child processes such as python); ``unset``: names the script unset;
    ``unsupported``: ``(line number, line)`` of every construct skipped;
    ``sourced``: other scripts it sourced (paths, whether or not they could be read).
    """

    variables: Dict[str, str] = field(default_factory=dict)
    exported: List[str] = field(default_factory=list)
    unset: List[str] = field(default_factory=list)
    unsupported: List[Tuple[int, str]] = field(default_factory=list)
    sourced: List[str] = field(default_factory=list)

    def environment(self, base: Mapping[str, str]) -> Dict[str, str]:
        """``base`` updated with the exported variables (and minus unset ones)."""
        env = {k: v for k, v in base.items() if k not in self.unset}
        for name in self.exported:
            if name in self.variables:
                env[name] = self.variables[name]
        return env

    def to_dict(self) -> Dict[str, Any]:
        """JSON form: the exported ``variables``, ``unsupported`` as ``{"line", "text"}``
        records and the ``sourced`` scripts."""
        return {
            "variables": {k: self.variables[k] for k in self.exported if k in self.variables},
            "unsupported": [{"line": n, "text": t} for n, t in self.unsupported],
            "sourced": list(self.sourced),
        }


#: Longest value one assignment may build (bytes).  CANN's longest variable, a sourced
#: toolkit's ``LD_LIBRARY_PATH``, is a few kilobytes; a longer value is a script doubling a
#: variable (``A=$A$A``), refused as not understood instead of growing without bound.
MAX_VALUE = 256 << 10
#: Total bytes all variable expansions of one evaluation may produce, whatever the lines
#: (past it every expansion is refused): time and memory stay bounded.
MAX_EXPANDED = 8 << 20


class State:
    """The interpreter's state: ``vars`` (every variable, the starting environment
    included), ``exported``/``unset`` names, the ``script`` being read (``$0``,
    ``BASH_SOURCE``), the ``arch`` for ``$(arch)``, the file system ``fs`` scripts and
    files are read through, the working directory ``cwd``, the ``result`` being built
    and the last command's ``status``."""

    def __init__(self, environ: Mapping[str, str], script: str, arch: str, fs: Any) -> None:
        self.vars: Dict[str, str] = dict(environ)
        self.exported: List[str] = []
        self.env_names = set(environ)
        self.unset: List[str] = []
        self.script = script
        self.arch = arch
        self.fs = fs
        self.cwd = posixpath.dirname(script) or "/"
        self.result = SetEnvResult()
        self.status = True
        #: Bytes produced by variable expansions so far (bounded by ``MAX_EXPANDED``).
        self.expanded = 0
