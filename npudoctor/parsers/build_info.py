"""Pure parsers of what frameworks record about their own build.

* :func:`python_constants` -- module-level ``NAME = <literal>`` assignments of a generated
  Python file such as ``vllm_ascend/_build_info.py``::

      # Auto-generated file
      __device_type__ = 'A2'
      __soc_version__ = 'ASCEND910B1'
      __sleep_mode_enabled__ = True

  (vllm-ascend setup.py ``custom_build_info`` / ``gen_build_info``).  The text is parsed with
  :mod:`ast`, never executed; anything that is not a literal assignment is ignored.

* :func:`torch_npu_description_row` -- the row of torch_npu's own wheel description (the
  project README in METADATA) that names the wheel's version, and the CANN that row names.
  The README's "Ascend Auxiliary Software" table has columns ``CANN Version | Supported
  PyTorch Version | Supported Adapter Version | Github Branch``; the CANN cell is left empty
  for the rows under the same CANN (``|  | 2.7.1 | 2.7.1 | v2.7.1-7.2.0 |``), and 2.1.0rc1's
  README is an HTML table.  Versions compare PEP 440-normalised (``2.1.0.rc1`` = ``2.1.0rc1``).
  Source: the METADATA of the 14 pre-release wheels read for
  npudoctor/knowledge/data/frameworks/prerelease_torch_npu.toml.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple, Union

from npudoctor import lazyre
from npudoctor.knowledge.versions import pep440_normal

Literal = Union[str, bool, int, float, None]


def python_constants(text: str) -> Dict[str, Literal]:
    """``{name: value}`` of the module-level literal assignments in ``text`` (str, bool,
    int, float or None values).  A file that does not parse gives ``{}``.  Never raises."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    out: Dict[str, Literal] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name) or not isinstance(node.value, ast.Constant):
            continue
        value = node.value.value
        if value is None or isinstance(value, (str, bool, int, float)):
            out[target.id] = value
    return out


#: The grammar of a README cell ("CANN 8.0.RC1"), not a version helper: the versions it
#: finds compare with :func:`npudoctor.knowledge.versions.pep440_normal`.
_CANN_RE = lazyre.pattern(r"CANN\s*([0-9][0-9A-Za-z.\-]*)", re.IGNORECASE)
_TAG_RE = lazyre.pattern(r"<[^>]+>")


def _rows(text: str) -> List[List[str]]:
    """Markdown table rows (cells, stripped) and HTML ``<tr>`` rows (cell texts)."""
    out: List[List[str]] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("|") and s.count("|") >= 3:
            out.append([c.strip() for c in s.strip("|").split("|")])
    for tr in re.findall(r"<tr\b.*?</tr>", text, flags=re.IGNORECASE | re.DOTALL):
        cells = re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", tr, flags=re.IGNORECASE | re.DOTALL)
        out.append([_TAG_RE.sub("", c).strip() for c in cells])
    return out


def torch_npu_description_row(text: str, version: str) -> Optional[Tuple[str, Optional[str]]]:
    """``(row, cann)`` for the table row of ``text`` (a torch_npu METADATA body) whose
    adapter column names ``version``; ``cann`` is the CANN named in that row or, when its
    CANN cell is empty, in the nearest row above that names one (``None`` when none does).
    ``None`` when no row names the version.  Never raises."""
    want = pep440_normal(version)
    last_cann: Optional[str] = None
    for cells in _rows(text):
        if not cells:
            continue
        m = _CANN_RE.search(cells[0]) if cells[0] else None
        if m:
            last_cann = m.group(1).rstrip(".")
        elif len(cells) >= 4 and re.match(r"^[0-9]+\.[0-9]+\.(RC\d|\d)", cells[0], re.IGNORECASE):
            # an HTML CANN cell without the word "CANN"; rows under a rowspan CANN cell have
            # only three cells and start with the PyTorch version
            last_cann = cells[0].split()[0]
        # any cell after the CANN one: HTML rows under a rowspan CANN cell lack that cell; a
        # pre-release version never equals the PyTorch column (2.4.0rc1 vs 2.4.0)
        if len(cells) >= 3 and any(pep440_normal(c) == want for c in cells[1:] if c):
            return " | ".join(cells), last_cann
    return None
