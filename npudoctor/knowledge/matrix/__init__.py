"""The compatibility matrix: model, loader, schema check and queries.

The matrix is TOML (``schema_version = 1``), one or several files merged:

* ``torch_npu.toml``: ``[[torch_npu]]`` rows (exact package version, torch, CANN, Python
  per platform from the PyPI wheels, branch, status, EOL), ``[[torch_line]]`` (lifecycle and
  documented Python per PyTorch line), ``[[release_tag]]`` (git tag -> package version);
* ``cann.toml``: ``[[cann]]`` rows (HDK pairing/compatibility/minimum, Python range, numpy
  bound per Python), ``[[install_pairing]]`` (tested driver/firmware), ``[[python_dep]]``;
* ``chips.toml``: ``[[family]]`` and ``[[chip]]`` rows (with their official product line),
  ``[[cann_floor]]`` (the first CANN release of a product line).

Every file has a ``[meta]`` table (``name``, ``source``, ``retrieved`` = YYYY-MM-DD) and every
row a ``source`` and ``retrieved``.  The facts come from the official
Ascend/pytorch tables, the CANN release notes and PyPI; each row cites its own source.

``load_matrix(path=None)`` returns the matrix in use: ``path`` (a .toml file or a directory
of them) if given; else the refreshed copy in the user cache (``npudoctor matrix refresh``)
if it validates and is not older than the bundled one; else the bundled ``matrix/*.toml``
(``npudoctor/_matrix`` in a wheel).  A malformed matrix raises :class:`MatrixError` with a
message naming the file, the row and the field.
"""

from npudoctor.knowledge.matrix.load import (
    load_bundled,
    load_from,
    load_matrix,
    load_uncached,
    merge_documents,
)
from npudoctor.knowledge.matrix.model import (
    PLATFORMS,
    SCHEMA_VERSION,
    STATUSES,
    CannFloor,
    Chip,
    DriverRequirement,
    Family,
    MatrixError,
    TorchNpuRow,
    _newest_first,
)
from npudoctor.knowledge.matrix.queries import Matrix
from npudoctor.knowledge.matrix.schema import validate
from npudoctor.knowledge.matrix_stamp import CACHE_ENV, CACHE_FILE, bundled_dir, cache_dir, cache_path

__all__ = [
    "CACHE_ENV",
    "CACHE_FILE",
    "PLATFORMS",
    "SCHEMA_VERSION",
    "STATUSES",
    "CannFloor",
    "Chip",
    "DriverRequirement",
    "Family",
    "Matrix",
    "MatrixError",
    "TorchNpuRow",
    "_newest_first",
    "bundled_dir",
    "cache_dir",
    "cache_path",
    "load_bundled",
    "load_from",
    "load_matrix",
    "load_uncached",
    "merge_documents",
    "validate",
]
