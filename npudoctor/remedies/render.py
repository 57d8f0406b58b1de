"""Shell rendering of remedies: the text of a finding's ``fix`` lines.

:func:`shell` turns one remedy into one line: ``lead`` + command + ``  # note``.  A
rendered command is always pasteable: words are quoted with :func:`shlex.quote`, and a
value the remedy does not know (a CANN version, a chip type, a firmware build) is never
written as a placeholder inside a command -- the line is prose saying what to install
and what is unknown.
"""

from __future__ import annotations

import shlex
from typing import List, Optional, Tuple

from npudoctor.knowledge import packages as pk
from npudoctor.record import replace
from npudoctor.remedies.steps import (
    Command,
    ComputedEnv,
    DockerFlags,
    EnvPairs,
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

#: What ``$(uname -m)`` stands for in a CANN file name, and its HDK spelling.
UNAME_ARCH = "$(uname -m)"
UNAME_DRIVER_ARCH = "$(uname -m | sed s/_/-/)"

LABELS = {
    "toolkit": "CANN toolkit",
    "kernels": "CANN kernels package",
    "ops": "CANN ops package",
    "nnal": "NNAL package",
    "driver": "NPU driver",
    "firmware": "NPU firmware",
}

#: Chip types named in prose when the chip of a machine is unknown.
_CHIP_CHOICES = {
    "kernels": "910b, 910, 310p or A3",
    "driver": "910b, 310p or 910",
    "firmware": "910b, 310p or 910",
}


def quote(word: str) -> str:
    """``word`` quoted for a POSIX shell (unchanged when it needs no quoting)."""
    return shlex.quote(word)


def _env(pairs: EnvPairs) -> List[str]:
    return [f"{name}={quote(value)}" for name, value in pairs]


def interpreter_words(python: Interpreter) -> List[str]:
    """``["HOME=/home/dev", "/usr/bin/python3.10", "-s"]``: env pairs, the interpreter
    (quoted) and its flags."""
    return _env(python.env) + [quote(python.executable)] + list(python.flags)


def _with_note(lead: str, command: str, note: str) -> str:
    return lead + command + (f"  # {note}" if note else "")


def install_args(step: InstallPackage) -> str:
    """The installer options of a package step (``--install`` for CANN, ``--full`` for HDK)."""
    if step.args:
        return step.args
    return "--full" if step.package in ("driver", "firmware") else "--install"


def package_name(step: InstallPackage) -> Optional[pk.PackageName]:
    """The package file of an install step (``$(uname -m)`` standing for an unknown
    arch), or ``None`` when its version or (for kernels/driver/firmware) chip is unknown."""
    if not step.version:
        return None
    arch = step.arch
    if step.package in ("toolkit", "nnal"):
        make = pk.toolkit_file if step.package == "toolkit" else pk.nnal_file
        return make(step.version, arch or UNAME_ARCH)
    if not step.chip:
        return None
    if step.package in ("kernels", "ops"):
        return pk.kernels_file(step.version, step.chip, arch or UNAME_ARCH)
    if step.package == "driver":
        return pk.driver_file(step.version, step.chip, arch or UNAME_DRIVER_ARCH)
    if step.package == "firmware":
        return pk.firmware_file(step.version, step.chip)
    raise ValueError(f"unknown package kind {step.package!r}")


def _install_prose(step: InstallPackage) -> str:
    """The words for a package step whose file cannot be named (version or chip unknown)."""
    kind = step.package
    if kind == "kernels" and step.version and pk.is_ops_era(step.version):
        kind = "ops"
    label = LABELS.get(kind, kind)
    if step.version:
        text = f"{step.lead}install the {label} {step.version}"
    else:
        text = f"{step.lead}install the {label} of {step.unknown or 'the version you need'}"
    if step.package in _CHIP_CHOICES and not step.chip:
        choices = _CHIP_CHOICES[step.package]
        text += UNKNOWN_CHIP.format(choices=choices)
        example = choices.split(",")[0]
        cmd = install_command(replace(step, chip=example))
        if cmd is not None:
            return text + f"{EXAMPLE_MARK}{example}: {cmd}"
    return text + f", run with {install_args(step)}"


#: What joins the prose of an install step whose chip is unknown to the command for one
#: chip type (:func:`example`).
EXAMPLE_MARK = "; for "


def example(line: str) -> Optional[Tuple[str, str, str]]:
    """``(prose, chip, command)`` of an install line whose chip is unknown and that ends
    with the command for one chip type (``...; for 910b: chmod +x F && ./F --install``),
    else ``None``: the report prints the prose, then the command as a ``$`` line."""
    head, mark, tail = line.rpartition(EXAMPLE_MARK)
    chip, colon, cmd = tail.partition(": ")
    if not mark or not colon or not cmd.startswith("chmod +x ") or " && ./" not in cmd:
        return None
    return head, chip, cmd


def install_command(step: InstallPackage) -> Optional[str]:
    """``chmod +x FILE && ./FILE ARGS`` of a package step, or ``None`` when unknown."""
    name = package_name(step)
    if name is None:
        return None
    return f"chmod +x {name.filename} && ./{name.filename} {install_args(step)}"


def docker_words(step: DockerFlags) -> List[str]:
    """The ``docker run`` flags of a :class:`DockerFlags` step, in the order of the
    standard vllm-ascend command (tests/fixtures/docker-run_vllm-ascend_standard-device-mounts.sh.txt)."""
    flags = [f"--runtime {quote(step.runtime)}"] if step.runtime else []
    flags += [f"--cap-add {quote(c)}" for c in step.cap_add]
    flags += [f"--shm-size={quote(step.shm_size)}"] if step.shm_size else []
    flags += [f"--ulimit {quote(u)}" for u in step.ulimits]
    flags += [f"--device /dev/davinci{i}" for i in step.devices]
    flags += [f"--device {quote(c)}" for c in step.control]
    ro = ":ro" if step.read_only else ""
    flags += [f"-v {quote(m)}:{quote(m)}{ro}" for m in step.mounts]
    flags += [f"-e {name}={quote(value)}" for name, value in step.env]
    return flags


def systemd_dropin(step: SystemdSetting) -> Tuple[str, str]:
    """``(path, text)`` of the drop-in file that holds a systemd setting."""
    unit = step.unit if "." in step.unit else step.unit + ".service"
    path = f"/etc/systemd/system/{unit}.d/npudoctor.conf"
    return path, f"[{step.section}]\n{step.key}={step.value}\n"


def command(remedy: Remedy) -> Optional[str]:
    """The bare shell command of a remedy (no lead, no note), or ``None`` for a step
    that is prose (a :class:`Prose`, a pod-spec field, a package whose name is unknown)."""
    if isinstance(remedy, InstallPackage):
        return install_command(remedy)
    if isinstance(remedy, SourceFile):
        return f"source {quote(remedy.path)}" + (f" {remedy.args}" if remedy.args else "")
    if isinstance(remedy, ComputedEnv):
        if remedy.toolkit_home:
            return f'export ASCEND_TOOLKIT_HOME={quote(remedy.toolkit_home)} && eval "$(npudoctor env)"'
        return 'eval "$(npudoctor env)"'
    if isinstance(remedy, Export):
        return None if remedy.value is None else f"export {remedy.var}={quote(remedy.value)}"
    if isinstance(remedy, PrependPath):
        head = quote(":".join(remedy.entries))
        if remedy.var == "PATH":
            return f"export PATH={head}:${{PATH}}"
        return f"export {remedy.var}={head}${{{remedy.var}:+:${{{remedy.var}}}}}"
    if isinstance(remedy, PipInstall):
        words = interpreter_words(remedy.python) + ["-m", "pip", "install"]
        words += [quote(r) for r in remedy.requirements]
        if remedy.index_url:
            words += ["--index-url", quote(remedy.index_url)]
        if remedy.extra_index_url:
            words += ["--extra-index-url", quote(remedy.extra_index_url)]
        return " ".join(words + list(remedy.options))
    if isinstance(remedy, PipUninstall):
        words = interpreter_words(remedy.python) + ["-m", "pip", "uninstall", "-y"]
        return " ".join(words + [quote(n) for n in remedy.names])
    if isinstance(remedy, RunFile):
        args = f" {remedy.args}" if remedy.args else ""
        if remedy.path.startswith("/"):
            return quote(remedy.path) + args
        return f"chmod +x {quote(remedy.path)} && ./{quote(remedy.path)}{args}"
    if isinstance(remedy, Command):
        words = [" ".join(_env(remedy.env) + [quote(a) for a in remedy.argv])]
        return " && ".join(words + [" ".join(quote(a) for a in argv) for argv in remedy.then])
    if isinstance(remedy, Pipeline):
        line = " | ".join(" ".join(quote(a) for a in stage) for stage in remedy.stages)
        return line + (f" > {quote(remedy.stdout)}" if remedy.stdout else "")
    if isinstance(remedy, DockerFlags):
        return " ".join(docker_words(remedy))
    if isinstance(remedy, SystemdSetting):
        path, _text = systemd_dropin(remedy)
        return (
            f"mkdir -p {quote(path.rsplit('/', 1)[0])} && "
            f"printf '[%s]\\n%s\\n' {quote(remedy.section)} {quote(remedy.key + '=' + remedy.value)} > {quote(path)} && "
            "systemctl daemon-reload"
        )
    if isinstance(remedy, Reboot):
        return "reboot"
    return None


def shell(remedy: Remedy) -> str:
    """One fix line: the remedy as a pasteable shell command with its lead and note, or
    prose when it has no command (see the module docstring)."""
    if isinstance(remedy, Prose):
        return remedy.text
    if isinstance(remedy, InstallPackage):
        cmd = install_command(remedy)
        if cmd is None:
            return _install_prose(remedy) + (f"; {remedy.note}" if remedy.note else "")
        return _with_note(remedy.lead, cmd, remedy.note)
    if isinstance(remedy, ComputedEnv):
        default = (
            "no set_env.sh next to this toolkit: npudoctor computes what it would set"
            if remedy.toolkit_home
            else "npudoctor computes what set_env.sh would set"
        )
        return _with_note(remedy.lead, command(remedy) or "", remedy.note or default)
    if isinstance(remedy, Export) and remedy.value is None:
        text = f"{remedy.lead}export {remedy.var} set to {remedy.unknown or 'the right value'}"
        return text + (f" ({remedy.note})" if remedy.note else "")
    if isinstance(remedy, DockerFlags) and remedy.pick_device:
        pick = "and --device /dev/davinciN of a free NPU N (the host's npu-smi info shows which NPUs are in use)"
        note = f"{pick}; {remedy.note}" if remedy.note else pick
        return _with_note(remedy.lead, command(remedy) or "", note)
    if isinstance(remedy, PodSpecField):
        text = f"{remedy.lead}in the pod spec, set {remedy.path}: {remedy.value}"
        return text + (f" ({remedy.note})" if remedy.note else "")
    cmd = command(remedy)
    return _with_note(remedy.lead, cmd or "", remedy.note)


#: How an install step says the chip type is unknown; said once per fix list (then
#: :data:`SAME_CHIP`).
UNKNOWN_CHIP = (
    " for this machine's NPU chip type (unknown here: no NPU chip of a known type was seen; one of {choices})"
)
SAME_CHIP = " for the same NPU chip type"


def shell_lines(remedies: List[Remedy]) -> List[str]:
    """:func:`shell` of each remedy, in order; that the chip type is unknown is said by the
    first install step that needs it, the others say "for the same NPU chip type"."""
    out: List[str] = []
    said = False
    for r in remedies:
        line = shell(r)
        if isinstance(r, InstallPackage) and not r.chip and r.package in _CHIP_CHOICES:
            clause = UNKNOWN_CHIP.format(choices=_CHIP_CHOICES[r.package])
            if said and clause in line:
                line = line.replace(clause, SAME_CHIP, 1)
            said = said or clause in line
        out.append(line)
    return out
