"""What npudoctor cannot conclude when a path could not be read (unreadable is
not absent), used by :mod:`npudoctor.rules.access`.

``BLIND`` maps a kind of refused path to the finding codes that conclude from absence (or
from a toolkit chosen because the right one could not be read) and so are left out while
such a path is unreadable: an unreadable site-packages does not make a package missing, an
unreadable toolkit directory does not make CANN absent, another release, or without kernels.

``KIND_PATHS`` are the default install locations per kind (Ascend docs, "Installing CANN":
the toolkit, kernels and NNAL install under ``/usr/local/Ascend`` for root -- ascend-toolkit,
cann-<version> from 8.5, nnae, nnal -- and the driver under ``/usr/local/Ascend/driver``);
a refused path is of a kind when it is one of them, lies under one, or is a directory on
the way to one.  ``HOME_DIR`` matches another account's home directory as a whole (refused
to an unprivileged account by design, reached only while looking for ~/Ascend).
"""

from __future__ import annotations

from typing import Dict, Tuple

#: Codes concluding from absence, per kind of unreadable path.
BLIND: Dict[str, Tuple[str, ...]] = {
    "site-packages": ("PKG002", "PKG006", "PKG008", "CANN007"),
    "cann": (
        "CANN001", "CANN002", "CANN003", "CANN004", "CANN005", "CANN006", "CANN008", "CANN011", "CANN012",
        "ENV001", "ENV002", "ENV003", "ENV004", "ENV005", "ENV006",
        "LIB001", "LIB006", "DRV002", "PKG006", "PKG007",
    ),
    "driver": ("DRV001", "DRV002", "DRV003", "CTR002"),
}  # fmt: skip

#: Install locations per kind: regular expressions over paths of the diagnosed machine.
KIND_PATHS: Dict[str, str] = {
    "cann": r"^/usr/local/Ascend/(ascend-toolkit|cann|cann-[^/]+|nnae|nnal)(/|$)",
    "driver": r"^/usr/local/Ascend/driver(/|$)",
}

#: The directories on the way to every kind's locations.
SHARED_PARENTS: Tuple[str, ...] = ("/usr", "/usr/local", "/usr/local/Ascend")

HOME_DIR = r"^/(root|home/[^/]+)/?$"
