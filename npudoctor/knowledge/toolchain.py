"""The GNU toolchain facts the library rules need: which GCC release first ships each
libstdc++ symbol version, and which GCC the common base images' system libstdc++ comes from."""

from __future__ import annotations

import re
from typing import Optional

#: The first GCC release whose libstdc++ defines each symbol version (libstdc++ manual,
#: "ABI Policy and Guidelines", section "Versioning": "GCC 11.1.0: GLIBCXX_3.4.29,
#: CXXABI_1.3.13", "GCC 12.1.0: GLIBCXX_3.4.30", "GCC 14.1.0: GLIBCXX_3.4.33, CXXABI_1.3.15").
GCC_FOR_GLIBCXX = {
    19: "4.8.3",
    20: "4.9.0",
    21: "5.1.0",
    22: "6.1.0",
    23: "7.1.0",
    24: "7.2.0",
    25: "8.1.0",
    26: "9.1.0",
    27: "9.2.0",
    28: "9.3.0",
    29: "11.1.0",
    30: "12.1.0",
    31: "13.1.0",
    32: "13.2.0",
    33: "14.1.0",
}
GCC_FOR_CXXABI = {
    7: "4.8.0",
    8: "4.9.0",
    9: "5.1.0",
    10: "6.1.0",
    11: "7.1.0",
    12: "9.1.0",
    13: "11.1.0",
    14: "13.1.0",
    15: "14.1.0",
}
#: Base images and the GCC major release their system libstdc++ comes from
#: (the distributions' libstdc++6 / libstdc++ packages).
DISTRO_GCC = (
    ("Ubuntu 20.04", 10),
    ("Ubuntu 22.04", 12),
    ("Ubuntu 24.04", 14),
    ("Debian 11", 10),
    ("Debian 12", 12),
    ("openEuler 22.03", 10),
    ("openEuler 24.03", 12),
)


def gcc_for(version: str) -> Optional[str]:
    """The first GCC release whose libstdc++ provides ``version`` (``GLIBCXX_3.4.29`` ->
    ``"11.1.0"``, ``CXXABI_1.3.13`` -> ``"11.1.0"``), or ``None`` for other names."""
    m = re.match(r"^GLIBCXX_3\.4\.([0-9]{1,9})$", version)
    if m:
        return GCC_FOR_GLIBCXX.get(int(m.group(1)))
    m = re.match(r"^CXXABI_1\.3\.([0-9]{1,9})$", version)
    if m:
        return GCC_FOR_CXXABI.get(int(m.group(1)))
    return None
