"""Who owns a shared library the audit reports: the NPU driver, the CANN toolkit, the CANN
kernels, NNAL, torch, torch_npu, a named wheel, or the OS.

The owner decides the fix: a driver library missing in a container comes from mounting
the host's driver (never from reinstalling the toolkit); a toolkit library from the
toolkit; an NNAL library from NNAL of the toolkit's CANN; a wheel's from that wheel.
Where the library is on disk decides first (the install layout: ``…/Ascend/driver/…``,
``…/opp/…``, ``…/nnal/…``, a toolkit's ``lib64``, ``site-packages/<top>/``, the OS's
library directories); a library found nowhere is attributed by its name (the files each
package ships: ``libascend_hal.so`` and ``libdrvdsmi_host.so`` in ``driver/lib64/driver``,
``libatb.so`` in ``nnal/atb/…/lib``, ``libc10.so`` in ``torch/lib``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.facts.runtime_env import LibrariesFacts, Resolution

if TYPE_CHECKING:
    from typing import Optional

DRIVER = "NPU driver"
TOOLKIT = "CANN toolkit"
KERNELS = "CANN kernels"
NNAL = "NNAL"
TORCH = "torch"
TORCH_NPU = "torch_npu"
OS = "the OS"

#: Libraries only the driver package ships (driver/lib64/driver, driver/lib64/common).
DRIVER_LIB_RE = lazyre.pattern(
    r"^(libascend_hal|libdrvdsmi_host|libdcmi|libdrvdsmi|libascend_dmp|libdrv_dfx)\.so(\.[0-9]+)*$"
)
NNAL_LIB_RE = lazyre.pattern(
    r"^(libatb[a-z0-9_]*|libasdops[a-z0-9_]*|libmki[a-z0-9_]*|liblcal[a-z0-9_]*)\.so(\.[0-9]+)*$"
)
TORCH_LIB_RE = lazyre.pattern(
    r"^(libtorch(?!_npu)[a-z0-9_]*|libc10(?!_npu)[a-z0-9_]*|libshm|libcaffe2[a-z0-9_]*)\.so(\.[0-9]+)*$"
)
TOOLKIT_LIB_RE = lazyre.pattern(
    r"^(libascendcl|libacl_[a-z0-9_]+|libhccl[a-z0-9_]*|libopapi|libnnopbase|libge_[a-z0-9_]+|libgraph[a-z0-9_]*"
    r"|libruntime[a-z0-9_]*|libregister|libplatform|liberror_manager|libmmpa|libmsprof[a-z0-9_]*|libascend_[a-z0-9_]+"
    r"|libtiling_api|libopp_[a-z0-9_]+|libfmk_[a-z0-9_]+|libprofapi|libascendalog|libunified_dlog|libc_sec)\.so(\.[0-9]+)*$"
)
OS_LIB_RE = lazyre.pattern(
    r"^(libc|libm|libpthread|libdl|librt|libutil|libresolv|libanl|libnsl|libmvec|ld-linux[-a-z0-9_]*|ld64"
    r"|libstdc\+\+|libgcc_s|libgomp|libatomic|libz|libssl|libcrypto|libnuma)\.so(\.[0-9]+)*$"
)
_SITE_RE = lazyre.pattern(r"/(?:site|dist)-packages/([^/]+)/")


def owner_of_path(path: str) -> Optional[str]:
    """The owner of the file at ``path`` (a path of the diagnosed machine) by where it
    lives, or ``None`` when the place says nothing."""
    if "/Ascend/driver/" in path or path.startswith("/usr/local/dcmi/"):
        return DRIVER
    if "/nnal/" in path:
        return NNAL
    if "/opp/" in path or "/opp_kernel/" in path:
        return KERNELS
    if "/Ascend/" in path:
        return TOOLKIT
    m = _SITE_RE.search(path)
    if m:
        top = m.group(1)
        if top == "torch":
            return TORCH
        if top == "torch_npu":
            return TORCH_NPU
        if top.endswith(".libs"):  # auditwheel's vendored copies: the wheel of that name
            top = top[: -len(".libs")]
        return f"the {top} wheel"
    if re.match(r"^/(usr/)?lib(64|32)?/", path):
        return OS
    return None


def owner_of_name(name: str) -> Optional[str]:
    """The owner of a library known by its file name (``DT_NEEDED`` entry), or ``None``."""
    base = name.rsplit("/", 1)[-1]
    for pattern, owner in (
        (DRIVER_LIB_RE, DRIVER),
        (NNAL_LIB_RE, NNAL),
        (TORCH_LIB_RE, TORCH),
        (OS_LIB_RE, OS),
        (TOOLKIT_LIB_RE, TOOLKIT),
    ):
        if pattern.match(base):
            return owner
    if base.startswith("libtorch_npu"):
        return TORCH_NPU
    return None


def owner(rec: Resolution, libs: Optional[LibrariesFacts] = None) -> str:
    """The owner of the library ``rec`` names: by the copies found on disk (usable ones
    first), then the file it resolved to, then its name; else "unknown".  Driver-only
    names stay the driver's wherever a copy was found."""
    by_name = owner_of_name(rec.name)
    if by_name == DRIVER:
        return DRIVER
    places = [f.path for f in rec.found_at if f.usable and f.path] + [f.path for f in rec.found_at if f.path]
    if rec.path:
        places.insert(0, rec.path)
    for place in places:
        found = owner_of_path(str(place))
        if found:
            return found
    return by_name or "unknown"
