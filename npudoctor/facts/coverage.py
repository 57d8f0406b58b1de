"""Whether the facts of an area were actually looked at: the third state beside "problem"
and "no problem".

An area whose section is present may still be unchecked: the devices section of a run with
``--no-commands`` or without ``npu-smi`` on ``PATH`` holds no chip at all, so "no finding" says
nothing about the chips.  Reports, triage and node agents ask here instead of each deciding it.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

#: npu-smi causes under which nothing about the chips was learnt (``probes/devices.py``);
#: a hung, crashed or failing npu-smi is itself a finding of the devices area.
_SMI_NOT_RUN = {"disabled", "not-installed"}


def not_checked(facts: Mapping[str, Any], area: str) -> Optional[str]:
    """Why the rules of ``area`` could not judge it on ``facts`` (a snapshot's ``facts``
    object), in words for people; ``None`` when they could.  Never raises on malformed
    facts (a malformed section counts as not checked)."""
    section = facts.get(area) if isinstance(facts, Mapping) else None
    if not isinstance(section, Mapping):
        return "not probed"
    if area == "devices":
        smi = section.get("npu_smi")
        if not isinstance(smi, Mapping):
            return "no npu-smi facts"
        if smi.get("available") is not True and smi.get("cause") in _SMI_NOT_RUN:
            error = smi.get("error")
            return str(error) if isinstance(error, str) and error else "npu-smi was not run"
    if area == "packages":
        skipped = section.get("skipped")
        if isinstance(skipped, str) and skipped:
            return skipped
    if area == "python":
        error = section.get("error")
        if isinstance(error, str) and error:
            return error
    return None
