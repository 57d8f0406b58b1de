"""Remedy steps of the Ascend software stack, shared by the CANN and driver rules:
installing an Ascend package, applying a toolkit's or NNAL's environment.  They take a
toolkit view and values, and judge nothing.

Package file names follow the official offline packages.  A whole release is installed in
the order that works in one shell (:func:`release_steps`): toolkit, ``source`` its
set_env.sh, kernels/ops, NNAL, ``source`` NNAL's set_env.sh.  Sources: vllm-ascend's
installation guide (``docs/source/installation.md``, "Install CANN manually") sources the
toolkit's set_env.sh right after the toolkit; in vllm-ascend#144 the kernels
installer failed in a shell that had not, and an Ascend engineer's fix was to source it
first (the guide was corrected in Ascend/docs pull request 69); the official CANN
container images source it before installing NNAL.
"""

from __future__ import annotations

from typing import List, Optional, Union

from npudoctor.facts.stack import Toolkit
from npudoctor.knowledge.packages import NNAL_SET_ENV, set_env_script
from npudoctor.remedies.steps import ComputedEnv, InstallPackage, Remedy, SourceFile

#: One fix step: a structured remedy, or a line of prose.
Step = Union[Remedy, str]


def set_env_path(toolkit: Optional[Toolkit], cann: Optional[str] = None) -> Optional[str]:
    """The set_env.sh to source: the one the cann probe found next to a toolkit record
    (``None`` when that toolkit has none), or, for a fresh install of ``cann``, where
    the installer puts it (:func:`npudoctor.knowledge.packages.set_env_script`)."""
    if toolkit is not None:
        return toolkit.set_env or None
    return set_env_script(cann)


def set_env_step(toolkit: Optional[Toolkit], cann: Optional[str] = None, lead: str = "") -> Remedy:
    """The step that applies a toolkit's environment: source its set_env.sh when that
    script exists, else let npudoctor compute what the script would set for the toolkit
    ``ASCEND_TOOLKIT_HOME`` names -- never a script that is not there."""
    script = set_env_path(toolkit, cann)
    if script:
        return SourceFile(script, lead=lead)
    where = toolkit.path if toolkit is not None else None
    return ComputedEnv(where or None, lead=lead)


def install(
    kind: str,
    version: Optional[str],
    arch: Optional[str],
    chip: Optional[str] = None,
    lead: str = "",
    unknown: str = "",
) -> InstallPackage:
    """An install step of an Ascend package (file name from knowledge/packages.py)."""
    return InstallPackage(kind, version or None, arch=arch, chip=chip, lead=lead, unknown=unknown)


def nnal_set_env(note: str = "") -> SourceFile:
    """``source`` NNAL's ATB set_env.sh."""
    return SourceFile(NNAL_SET_ENV, note=note)


def release_steps(
    version: Optional[str],
    arch: Optional[str],
    chip: Optional[str],
    nnal: bool,
    unknown: str = "",
    lead: str = "",
    note: str = "",
) -> List[Step]:
    """The steps that install CANN ``version`` whole (see the module docstring for the
    order and its sources): toolkit (``lead`` before it; later steps are indented by two
    spaces when there is one), the toolkit's set_env.sh, kernels/ops for ``chip``, and,
    when ``nnal``, NNAL and its set_env.sh (``note`` after that ``source``)."""
    rest = "  " if lead else ""
    steps: List[Step] = [
        install("toolkit", version, arch, lead=lead, unknown=unknown),
        set_env_step(None, version, lead=rest),
        install("kernels", version, arch, chip, lead=rest, unknown=unknown),
    ]
    if nnal:
        steps += [
            install("nnal", version, arch, lead=rest, unknown=unknown),
            SourceFile(NNAL_SET_ENV, lead=rest, note=note),
        ]
    return steps
