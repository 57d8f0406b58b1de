"""Regular expressions compiled on first use.

A module-level ``re.compile`` runs on every import of its module, whether or not the
pattern is used in that run: ``npudoctor health`` imported over a hundred of them, a tenth
or more of its run (docs/performance.md).  :func:`pattern` returns a :class:`LazyPattern` instead:
it holds the regex and its flags and compiles them when a method or attribute of the
pattern is first asked for.  From then on the compiled pattern's own bound methods are
stored on the object, so a call costs one instance-dict lookup, as a plain
``re.Pattern`` method call does: no per-call check, hot loops may use it as it is.

Only what npudoctor uses is offered (``match``, ``fullmatch``, ``search``, ``finditer``,
``findall``, ``sub``, ``subn``, ``split``, ``pattern``, ``flags``, ``groups``,
``groupindex``); :meth:`LazyPattern.compiled` gives the ``re.Pattern`` itself where one is
required (``re.sub(P, ...)``, ``isinstance``).  A bad regex raises ``re.error`` at first
use rather than at import; ``tests/test_lazyre.py`` compiles every pattern of the package.

Thread safety: two threads may both compile on first use; ``re`` returns equal patterns
and the last assignment wins, which is harmless.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, AnyStr, Callable, Dict, Generic, Iterator, List, Optional, Tuple, Union, overload

__all__ = ["LazyPattern", "pattern", "all_patterns"]

# Every LazyPattern made, so that a test can compile them all (a typo in a regex must
# fail the suite, not the first run that happens to need it).
_MADE: List[LazyPattern[Any]] = []

# The names a first use compiles and binds onto the instance.
_METHODS = ("match", "fullmatch", "search", "finditer", "findall", "sub", "subn", "split")
_ATTRIBUTES = ("flags", "groups", "groupindex")


class LazyPattern(Generic[AnyStr]):
    """``re.compile(regex, flags)``, done on first use (see the module docstring).

    ``pattern`` is the regex as given (str or bytes), available without compiling.
    """

    __slots__ = ("pattern", "_flags", "_compiled", "__dict__")

    def __init__(self, regex: AnyStr, flags: int = 0) -> None:
        self.pattern: AnyStr = regex
        self._flags = flags
        self._compiled: Optional[re.Pattern[AnyStr]] = None

    def compiled(self) -> re.Pattern[AnyStr]:
        """The compiled ``re.Pattern`` (compiling it now if not yet).  Raises ``re.error``
        for a bad regex."""
        found = self._compiled
        if found is None:
            found = re.compile(self.pattern, self._flags)
            bound = self.__dict__
            for name in _METHODS + _ATTRIBUTES:
                bound[name] = getattr(found, name)
            self._compiled = found
        return found

    def __getattr__(self, name: str) -> Any:
        # Reached only for names not yet bound on the instance: the first use.
        if name in _METHODS or name in _ATTRIBUTES:
            self.compiled()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"lazyre.pattern({self.pattern!r}, {self._flags!r})"

    def __reduce__(self) -> Tuple[Any, Tuple[Any, int]]:
        return (pattern, (self.pattern, self._flags))

    if TYPE_CHECKING:  # the methods __getattr__ binds on first use, as typeshed types them
        flags: int
        groups: int
        groupindex: Dict[str, int]

        def match(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> Optional[re.Match[AnyStr]]: ...

        def fullmatch(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> Optional[re.Match[AnyStr]]: ...

        def search(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> Optional[re.Match[AnyStr]]: ...

        def finditer(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[AnyStr]]: ...

        def findall(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> List[Any]: ...

        def split(self, string: AnyStr, maxsplit: int = 0) -> List[Union[AnyStr, Any]]: ...

        def sub(
            self, repl: Union[AnyStr, Callable[[re.Match[AnyStr]], AnyStr]], string: AnyStr, count: int = 0
        ) -> AnyStr: ...

        def subn(
            self, repl: Union[AnyStr, Callable[[re.Match[AnyStr]], AnyStr]], string: AnyStr, count: int = 0
        ) -> Tuple[AnyStr, int]: ...


if TYPE_CHECKING:

    @overload
    def pattern(regex: str, flags: int = 0) -> LazyPattern[str]: ...

    @overload
    def pattern(regex: bytes, flags: int = 0) -> LazyPattern[bytes]: ...


def pattern(regex: Union[str, bytes], flags: int = 0) -> LazyPattern[Any]:
    """A :class:`LazyPattern` for ``re.compile(regex, flags)``: same regex, same flags,
    same results, compiled on first use.  ``regex`` is str or bytes; ``flags`` the ``re``
    flags (int or ``re.RegexFlag``).  Never raises here; a bad regex raises ``re.error``
    at first use.  For module-level patterns: each one made is kept for
    :func:`all_patterns` (a pattern built per call belongs in ``re.compile``/``re``'s
    cache instead)."""
    made: LazyPattern[Any] = LazyPattern(regex, int(flags))
    _MADE.append(made)
    return made


def all_patterns() -> List[LazyPattern[Any]]:
    """Every pattern made so far in this process (for tests that compile them all)."""
    return list(_MADE)
