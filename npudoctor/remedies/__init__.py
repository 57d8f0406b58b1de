"""Remedies: the steps a finding recommends, as data (:mod:`.steps`), rendered in one
place to shell (:mod:`.render`: the ``fix`` lines), Dockerfile, pod spec and Markdown
(:mod:`.forms`), and the offline installer script (:mod:`.install`).

Rules build remedies and never format shell themselves.
"""

from __future__ import annotations

from npudoctor.remedies.forms import dockerfile, markdown, podspec, to_dict
from npudoctor.remedies.render import command, shell, shell_lines
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
