"""The framework release to compute fixes for when the installed one cannot run on this
machine's NPU chips (not a rule module: shared by the chip, package and CANN rules).

The chip-support data (``knowledge/data/frameworks/framework_support.toml``, every row with
its sources) states of some framework releases that they do not run on a chip family at all,
and names the first release that does.  The chip rule (:mod:`npudoctor.rules.chips`) reports
that and says to move to that release; its fix comes first in the fix order
(:mod:`npudoctor.rules.order`).  The fixes computed from the framework's release -- the
torch_npu build it needs, the CANN paired with that -- are then computed for the release to
move to (:func:`move_for`), so that they fit the stack the first fix leaves instead of the
release it replaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.knowledge import chip_support
from npudoctor.knowledge.chip_support import Support
from npudoctor.knowledge.chips import chip_identity
from npudoctor.knowledge.frameworks import rows_for
from npudoctor.record import Record

if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

    from npudoctor.facts.devices import DevicesFacts
    from npudoctor.knowledge.frameworks import FrameworkRow
    from npudoctor.knowledge.matrix import Matrix


class Move(Record):
    """``framework`` ``installed`` does not run on the chip ``chip`` (family ``family``), as
    the support row ``unsupported`` states; ``release`` is the first release that does (its
    row: ``target``)."""

    framework: str
    installed: str
    chip: str
    family: str
    release: str
    unsupported: Support
    target: Support


def release_for(framework: str, family: str) -> Optional[Support]:
    """The support row naming the release to move to for ``framework`` on chip ``family``:
    the open-ended ``supported`` row, else the earliest row that runs at all; ``None`` when
    no row names its first release."""
    first = chip_support.newest_supported(framework, family) or chip_support.first_supporting(framework, family)
    return first if first is not None and first.first_version else None


def chip_families(devices: DevicesFacts, matrix: Optional[Matrix]) -> List[Tuple[str, str]]:
    """``(npu-smi Name, family)`` of each chip of ``devices`` that ``matrix`` knows, once
    per name, by name."""
    seen: Dict[str, str] = {}
    for chip in devices.chips:
        name = chip.name or ""
        if name and name not in seen:
            family = chip_identity(matrix, chip).get("family")
            if family:
                seen[name] = str(family)
    return sorted(seen.items())


def move_for(devices: DevicesFacts, matrix: Optional[Matrix], framework: str, version: Optional[str]) -> Optional[Move]:
    """The :class:`Move` for ``framework`` ``version`` when its sources state that it does
    not run on a chip of ``devices`` and name a release that does; ``None`` otherwise (a
    support that is only inferred or experimental leaves the fixes for the installed
    release)."""
    if not version:
        return None
    for name, family in chip_families(devices, matrix):
        row = chip_support.support_for(framework, family, version)
        if row is None or row.status != "unsupported" or row.confidence != "stated":
            continue
        first = release_for(framework, family)
        if first is not None:
            return Move(
                framework=framework,
                installed=version,
                chip=name,
                family=family,
                release=first.first_version,
                unsupported=row,
                target=first,
            )
    return None


def move_with_row(
    devices: DevicesFacts, matrix: Optional[Matrix], framework: str, version: Optional[str]
) -> Optional[Tuple[Move, FrameworkRow]]:
    """The :class:`Move` of :func:`move_for` and the framework table's row of the release to
    move to (what it needs); ``None`` without a move or without such a row."""
    move = move_for(devices, matrix, framework, version)
    rows = rows_for(framework, move.release) if move is not None else []
    return (move, rows[0]) if move is not None and rows else None
