"""Numbers read from files, command output and snapshots: ASCII digits only, bounded length.

Python's ``int()`` accepts any Unicode decimal digit (``int("٣") == 3``), raises on other
digits ``str.isdigit()`` admits (``"²"``), and refuses strings of more than 4,300 digits with a
``ValueError`` (Python 3.11+; CVE-2020-10735).  ``\\d`` in a ``str`` pattern matches every
Unicode decimal digit.  A number npudoctor reads from the judged machine is therefore taken
only as ASCII digits of a bounded length; anything else is "not a number" (``None``), never an
exception and never a misread.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre

if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Pattern, Tuple

__all__ = ["DIGITS", "MAX_DIGITS", "numbers_in", "strtol", "to_int"]

#: Longest run of digits read as a number (10**18 fits every id, size and counter we read).
MAX_DIGITS = 18

#: A run of 1..18 ASCII digits that is not part of a longer run: use it inside patterns
#: instead of ``\\d+`` / ``[0-9]+`` (a 5,000-digit run does not match at all).
DIGITS = r"(?<![0-9])[0-9]{1,18}(?![0-9])"

_CLASS = {8: "[0-7]", 10: "[0-9]", 16: "[0-9A-Fa-f]"}
_FULL: Dict[Tuple[int, int], Pattern[str]] = {}
_RUN = lazyre.pattern(DIGITS)


def to_int(value: Any, base: int = 10, max_digits: int = MAX_DIGITS) -> Optional[int]:
    """``value`` (a ``str``: optional surrounding white space, an optional ``-``, then 1 to
    ``max_digits`` ASCII digits of ``base`` 8, 10 or 16) as an ``int``; ``None`` for anything
    else -- other types, Unicode digits, longer runs, signs or words.  Never raises."""
    if not isinstance(value, str) or len(value) > max_digits + 64:
        return None
    key = (base, max_digits)
    rx = _FULL.get(key)
    if rx is None:
        rx = _FULL[key] = re.compile(r"\s*(-?" + _CLASS[base] + "{1," + str(max_digits) + r"})\s*")
    m = rx.fullmatch(value)
    return int(m.group(1), base) if m else None


def numbers_in(text: str) -> Tuple[int, ...]:
    """The runs of 1..18 ASCII digits in ``text``, as ints (``"8.0.RC2.b010"`` -> ``(8, 0, 2,
    10)``); longer runs are left out, Unicode digits are not digits here."""
    return tuple(int(m) for m in _RUN.findall(text))


#: ``LONG_MAX`` of an LP64 C library: what ``strtol`` gives for a larger number.
LONG_MAX = (1 << 63) - 1


def strtol(value: str) -> Tuple[int, bool]:
    """C's ``strtol(value, nullptr, 10)`` and whether the whole text was a number.

    Leading blanks and one sign, then the leading ASCII digits; text without digits reads as
    0, a number beyond ``long`` is clamped to ``LONG_MAX`` (``LONG_MIN``) as C does.  The
    flag is ``False`` when trailing text was ignored or there were no digits."""
    text = value.lstrip(" \t\n\r\f\v")
    sign = 1
    i = 0
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        i = 1
    j = i
    while j < len(text) and "0" <= text[j] <= "9":
        j += 1
    if j == i:
        return 0, False
    digits = text[i:j].lstrip("0") or "0"
    magnitude = int(digits) if len(digits) <= MAX_DIGITS else LONG_MAX + 1
    if sign > 0:
        return min(magnitude, LONG_MAX), j == len(text)
    return -min(magnitude, LONG_MAX + 1), j == len(text)
