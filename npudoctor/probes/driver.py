"""NPU driver and firmware facts, read from files (no command is run here: the
``npu-smi`` header version is read by the devices probe, ``facts["devices"]["npu_smi"]``).

Section ``driver`` (read by ``npudoctor/rules/driver.py``, the container and devices
rules, the planner and ``compare``)::

    install_info  {"path": "/etc/ascend_install.info", "values": {key_lowercase: value},
                   "error": str | None} | None      (None: the file is absent)
    driver        {"path": "/usr/local/Ascend/driver", "exists": bool,
                   "version": "24.1.rc2.2" | None,          ``Version=`` of driver/version.info
                   "package_version": str | None,           ``package_version=`` (absent in 24.1.rc1)
                   "innerversion": str | None,
                   "ascendhal_version": str | None,
                   "compatible_version_fw": [[low, high], ...],   firmware ranges the driver accepts
                   "source": "/usr/local/Ascend/driver/version.info" | None,
                   "found_via": "Driver_Install_Path_Param" | "default",
                   "lib64": bool,                            driver/lib64 present
                   "error": str | None}                      why the version could not be read
    firmware      {"path", "exists", "version": "7.7.0.1.231" | None,
                   "package_version": "25.0.rc1.1" | None,   the HDK release it came with
                   "compatible_version_drv": [[low, high], ...],  drivers it accepts; a high end
                                                             ending in "." is a prefix range
                   "source", "found_via", "error"}
    npu_smi_driver_version  None (filled by nobody here; rules read
                   facts["devices"]["npu_smi"]["driver_version"] for the table header)

The driver directory comes from ``Driver_Install_Path_Param`` of ``/etc/ascend_install.info``
(``<param>/driver``) when that file names one, else ``/usr/local/Ascend/driver``; the
firmware likewise from ``Firmware_Install_Path_Param``.  In a container these files are
the host's, bind-mounted: the versions are the host's driver and firmware.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Optional

from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.parsers.info_files import ascend_install_info, driver_version_info, firmware_version_info

SECTION = "driver"
NEEDS = ()
QUICK = True

DEFAULT_PARAM = "/usr/local/Ascend"
INSTALL_INFO = "/etc/ascend_install.info"


def _read(host: Host, path: str) -> Dict[str, Any]:
    """``{"text", "error"}`` for a small file; ``error`` is ``None`` when fully read as UTF-8."""
    res = host.read_text(path, limit=64 * 1024)
    if not res.ok:
        return {"text": None, "error": res.error or "unreadable"}
    error = None
    if res.lossy:
        error = "not UTF-8 (bytes replaced)"
    elif res.truncated:
        error = "too large; read the head only"
    return {"text": res.text, "error": error}


def _install_info(host: Host) -> Optional[Dict[str, Any]]:
    read = _read(host, INSTALL_INFO)
    if read["text"] is None and read["error"] == "not found":
        return None
    values = ascend_install_info(read["text"] or "")
    error = read["error"]
    if read["text"] is not None and not values:
        error = error or "no Key=Value line (empty, truncated or garbled)"
    return {"path": INSTALL_INFO, "values": values, "error": error}


def _component(host: Host, base: str, found_via: str, kind: str) -> Dict[str, Any]:
    path = posixpath.join(base, kind)
    info_path = posixpath.join(path, "version.info")
    out: Dict[str, Any] = {
        "path": path,
        "exists": host.is_dir(path),
        "version": None,
        "package_version": None,
        "source": None,
        "found_via": found_via,
        "error": None,
    }
    read = _read(host, info_path)
    if read["text"] is None:
        out["error"] = None if read["error"] == "not found" and not out["exists"] else f"{info_path}: {read['error']}"
    else:
        parsed = driver_version_info(read["text"]) if kind == "driver" else firmware_version_info(read["text"])
        for key, value in parsed.items():
            out[key] = [list(r) for r in value] if key.startswith("compatible_version_") else value
        problems = [read["error"]] if read["error"] else []
        if parsed["version"]:
            out["source"] = info_path
            out["exists"] = True
        else:
            problems.append("no Version= line (empty, truncated or garbled)")
        if problems:
            out["error"] = f"{info_path}: " + "; ".join(problems)
    if kind == "driver":
        out["lib64"] = host.is_dir(posixpath.join(path, "lib64"))
    return out


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    install = _install_info(host)
    values = (install or {}).get("values") or {}
    results: Dict[str, Any] = {"install_info": install, "npu_smi_driver_version": None}
    for kind, param, label in (
        ("driver", "driver_install_path_param", "Driver_Install_Path_Param"),
        ("firmware", "firmware_install_path_param", "Firmware_Install_Path_Param"),
    ):
        bases = []
        value = values.get(param, "").strip()
        if value.startswith("/"):
            bases.append((value.rstrip("/") or "/", label))
        bases.append((DEFAULT_PARAM, "default"))
        chosen: Optional[Dict[str, Any]] = None
        for base, via in bases:
            record = _component(host, base, via, kind)
            if chosen is None or (record["exists"] and not chosen["exists"]):
                chosen = record
            if record["exists"]:
                break
        results[kind] = chosen
    return results
