"""Chip identity: what an npu-smi chip name is (its matrix row), its family, its SoC and
the chip part of the Ascend package names (``910b``, ``310p``, ``910``, ``A3``).

The data is ``matrix/chips.toml`` (``[[chip]]`` and ``[[family]]`` rows, each with its
sources), read through the loaded :class:`~npudoctor.knowledge.matrix.Matrix`.  A chip is
judged with the current matrix on every run: identity fields an older snapshot stored are
never taken over.  Nothing here raises on an unknown chip or a matrix that cannot answer:
the chip is unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.facts._typed import load
from npudoctor.facts.devices import Chip

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, Mapping, Optional, Union

    from npudoctor.facts.devices import DevicesFacts
    from npudoctor.knowledge.matrix import Chip as MatrixChip
    from npudoctor.knowledge.matrix import Matrix

#: ``soc_source`` prefix of a soc_version an older devices probe looked up in the matrix
#: (not measured): such a value is looked up again, with the current matrix.
_MATRIX_SOURCE = "matrix"


def matrix_chip(matrix: Optional[Matrix], name: str) -> Optional[MatrixChip]:
    """The matrix row of an npu-smi Name or SoC name (``matrix.chip(name)``), or ``None``:
    no matrix, an unknown chip, or a matrix that cannot answer."""
    if matrix is None:
        return None
    try:
        return matrix.chip(name)
    except Exception:  # a matrix that cannot answer leaves the chip unknown
        return None


def chip_identity(matrix: Optional[Matrix], chip: Union[Chip, Mapping[str, Any]]) -> Dict[str, Any]:
    """What the matrix knows about one ``devices.chips`` record, judged now.

    ``matrix``: the loaded matrix or ``None``; ``chip``: the record's view (a raw record,
    a mapping, is read through the same view first; ``name`` is the npu-smi Name;
    ``soc_version`` with a ``soc_source`` is kept when npu-smi measured it, e.g.
    ``-t board`` for A3).  Returns ``{"soc_version", "soc_source", "family", "bf16",
    "kernels_dir", "product_line", "known"}``: family/bf16/kernels_dir/product_line (the
    official product series, ``None`` when not recorded) always come from
    ``matrix.chip(name)`` (identity fields an older snapshot stored are ignored), so a
    replayed snapshot is judged with the current matrix; ``known`` is False when the
    matrix does not list the chip (or there is no matrix).  Never raises.
    """
    if not isinstance(chip, Chip):
        chip = load(Chip, chip)[0]
    soc, source = chip.soc_version, chip.soc_source
    if soc and source and source.startswith(_MATRIX_SOURCE):
        soc = source = None
    info = matrix_chip(matrix, chip.name or "")
    out: Dict[str, Any] = {"soc_version": soc, "soc_source": source if soc else None}
    out["family"] = info.family if info is not None else None
    out["bf16"] = info.bf16 if info is not None else None
    out["kernels_dir"] = info.kernels_dir if info is not None else None
    out["product_line"] = (info.product_line or None) if info is not None else None
    if not soc and info is not None and info.soc_version:
        out["soc_version"] = info.soc_version
        out["soc_source"] = "matrix (npu-smi Name)"
    out["known"] = out["family"] is not None
    return out


def product_lines(matrix: Optional[Matrix], chips: Iterable[Union[Chip, Mapping[str, Any]]]) -> Dict[str, str]:
    """``{npu-smi Name: official product line}`` of the chips the matrix records a product
    line for (matrix/chips.toml), in the order first seen; ``{}`` without a matrix."""
    out: Dict[str, str] = {}
    for chip in chips:
        line = chip_identity(matrix, chip).get("product_line")
        name = chip.name if isinstance(chip, Chip) else chip.get("name")
        if name and line and str(name) not in out:
            out[str(name)] = str(line)
    return out


def package_chip(matrix: Optional[Matrix], devices: DevicesFacts) -> Optional[str]:
    """The chip part of the package names (``910b``, ``310p``, ``910``, ``A3``) for the
    NPU chips of this machine, or ``None`` when no chip is known.

    From ``devices.chips[*].name`` via ``matrix.chip(name).kernels_package_chip``
    (chips.toml); a chip the matrix does not list is unknown here."""
    for chip in devices.named_chips:
        info = matrix_chip(matrix, str(chip.name))
        if info is not None and info.kernels_package_chip:
            return info.kernels_package_chip
    return None


def family_package_chip(matrix: Optional[Matrix], family: Optional[str]) -> Optional[str]:
    """The chip part of the package names for a chip family (``"910B"`` → ``"910b"``): the
    family row's ``package_chip`` in chips.toml; ``None`` for an unknown family, a family
    without packages of its own (legacy ``310``), or no matrix."""
    if matrix is None or not family:
        return None
    try:
        row = matrix.families.get(family)
    except Exception:  # a matrix that cannot answer leaves the family unknown
        return None
    return (row.package_chip or None) if row is not None else None
