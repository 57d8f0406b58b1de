"""Remedies: the steps a finding recommends, as data (:mod:`.steps`), rendered in one
place to shell (:mod:`.render`: the ``fix`` lines), Dockerfile, pod spec and Markdown
(:mod:`.forms`), and the offline installer script (:mod:`.install`).

Rules build remedies and never format shell themselves.  The renderers are imported when
first used (a rule module needs the steps only, and a run without a remedy to show never
renders one: ``devices``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.remedies.steps import (
    KINDS,
    Command,
    ComputedEnv,
    DockerFlags,
    Export,
    InstallPackage,
    Interpreter,
    Pipeline,
    PipInstall,
    PipUninstall,
    PodSpecField,
    PrependPath,
    Prose,
    Reboot,
    Remedy,
    RunFile,
    SourceFile,
    SystemdSetting,
)

if TYPE_CHECKING:
    from typing import Any

    from npudoctor.remedies.forms import dockerfile, markdown, podspec, to_dict
    from npudoctor.remedies.render import command, shell, shell_lines

#: The renderers' names and their modules, imported on first use (:func:`__getattr__`).
_LAZY = {
    "command": "render",
    "shell": "render",
    "shell_lines": "render",
    "dockerfile": "forms",
    "markdown": "forms",
    "podspec": "forms",
    "to_dict": "forms",
}


def __getattr__(name: str) -> Any:
    """A renderer named in :data:`_LAZY`, imported now (PEP 562); ``AttributeError`` else."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "KINDS",
    "Command",
    "ComputedEnv",
    "DockerFlags",
    "Export",
    "InstallPackage",
    "Interpreter",
    "Pipeline",
    "PipInstall",
    "PipUninstall",
    "PodSpecField",
    "PrependPath",
    "Prose",
    "Reboot",
    "Remedy",
    "RunFile",
    "SourceFile",
    "SystemdSetting",
    "command",
    "dockerfile",
    "markdown",
    "podspec",
    "shell",
    "shell_lines",
    "to_dict",
]
