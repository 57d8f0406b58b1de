"""Remedies as data: each step a rule recommends is a frozen dataclass, rendered to text
only by :mod:`npudoctor.remedies.render` (shell), :mod:`npudoctor.remedies.forms`
(Dockerfile, pod spec, Markdown) and :mod:`npudoctor.remedies.install` (install.sh).

Every step carries two pieces of prose around its command: ``lead`` (printed before the
command, e.g. ``"option A (preferred: keep CANN 8.0.0): "`` or two spaces for a
continuation line) and ``note`` (printed after it as a shell comment, ``  # note``).
Values a rule does not know are ``None``; the renderers then write prose saying so
instead of a command with a placeholder in it.
"""

from __future__ import annotations

from typing import Optional, Tuple, Union

from npudoctor.record import Record

#: ``(name, value)`` pairs of environment variables set for one command.
EnvPairs = Tuple[Tuple[str, str], ...]


class Interpreter(Record):
    """How to run a Python interpreter: ``executable`` (a path as on the diagnosed
    machine, unquoted; ``python3`` when unknown), interpreter ``flags`` (``("-s",)``: no
    user site), and ``env`` pairs put before it (``HOME=/home/dev``, ``PYTHONPATH=/x``)."""

    executable: str
    flags: Tuple[str, ...] = ()
    env: EnvPairs = ()


class InstallPackage(Record):
    """Install the Ascend offline package ``package`` (``toolkit`` | ``kernels`` (the
    renderer picks ``ops`` for CANN 8.5.0+) | ``nnal`` | ``driver`` | ``firmware``)
    ``version`` for ``arch`` (``aarch64`` | ``x86_64``; ``None``: ``$(uname -m)`` at run
    time) and package chip type ``chip`` (``910b``...; ``None``: unknown).  The file name
    comes from :mod:`npudoctor.knowledge.packages`.  ``version`` is ``None`` when it is
    not known; ``unknown`` then says in prose which version is meant ("the CANN paired
    with torch_npu 2.1.0").  ``args`` overrides the installer options (default
    ``--install`` for CANN packages, ``--full`` for driver and firmware)."""

    package: str
    version: Optional[str]
    arch: Optional[str] = None
    chip: Optional[str] = None
    unknown: str = ""
    args: str = ""
    lead: str = ""
    note: str = ""


class SourceFile(Record):
    """``source path [args]`` (a set_env.sh)."""

    path: str
    args: str = ""
    lead: str = ""
    note: str = ""


class ComputedEnv(Record):
    """Apply the environment npudoctor computes for a toolkit that has no set_env.sh
    (``eval "$(npudoctor env)"``), with ``ASCEND_TOOLKIT_HOME`` exported first when
    ``toolkit_home`` is given."""

    toolkit_home: Optional[str] = None
    lead: str = ""
    note: str = ""


class Export(Record):
    """``export VAR=value`` (``value`` is literal text, quoted by the renderer; a
    ``value`` of ``None`` means the value is not known and is described by ``unknown``)."""

    var: str
    value: Optional[str]
    unknown: str = ""
    lead: str = ""
    note: str = ""


class PrependPath(Record):
    """Put ``entries`` in front of the list variable ``var`` (``LD_LIBRARY_PATH``,
    ``PYTHONPATH``, ``PATH``), never replacing the user's value; an unset variable gets
    no trailing ``:`` (an empty entry means the current directory to ld.so and Python)."""

    var: str
    entries: Tuple[str, ...]
    lead: str = ""
    note: str = ""


class PipInstall(Record):
    """``<interpreter> -m pip install SPEC... [--index-url I] [--extra-index-url E] [options]``
    (``options``: pip options such as ``--force-reinstall``, ``--no-deps``)."""

    python: Interpreter
    requirements: Tuple[str, ...]
    index_url: Optional[str] = None
    extra_index_url: Optional[str] = None
    options: Tuple[str, ...] = ()
    lead: str = ""
    note: str = ""


class PipUninstall(Record):
    """``<interpreter> -m pip uninstall -y NAME...``; ``site`` is the directory the copy
    removed lives in (data for reports; the interpreter's flags and env decide which
    copy pip removes)."""

    python: Interpreter
    names: Tuple[str, ...]
    site: Optional[str] = None
    lead: str = ""
    note: str = ""


class RunFile(Record):
    """Run an executable file: ``chmod +x path && ./path args`` (a relative ``path``) or
    ``path args`` (an absolute one)."""

    path: str
    args: str = ""
    lead: str = ""
    note: str = ""


class Command(Record):
    """A plain command given as argv (each word quoted by the renderer), with ``env``
    pairs before it, and the commands of ``then`` run after it, each only when the one
    before succeeded (joined with ``&&``: ``apt-get update && apt-get install -y P``)."""

    argv: Tuple[str, ...]
    env: EnvPairs = ()
    then: Tuple[Tuple[str, ...], ...] = ()
    lead: str = ""
    note: str = ""


class Pipeline(Record):
    """Commands given as argv (each word quoted by the renderer) joined with ``|``, the
    last one's output sent to the file ``stdout`` when given (``> /dev/null``):
    ``dmesg | grep -i davinci | tail -50``."""

    stages: Tuple[Tuple[str, ...], ...]
    stdout: Optional[str] = None
    lead: str = ""
    note: str = ""


class DockerFlags(Record):
    """``docker run`` flags: ``--device /dev/davinciN`` per id of ``devices``,
    ``--device`` per path of ``control``, ``-v m:m`` per path of ``mounts``, ``-e K=V``
    per pair of ``env`` (``-v m:m:ro`` with ``read_only``), ``--runtime R`` for ``runtime``
    (the Ascend Docker Runtime registers as ``ascend``) and ``--cap-add C`` per name of
    ``cap_add``, ``--shm-size S`` for ``shm_size`` (``"16g"``) and ``--ulimit U`` per limit of
    ``ulimits`` (``"memlock=-1"``).  ``pick_device`` adds prose asking for one free NPU's node
    when the id is not known."""

    devices: Tuple[int, ...] = ()
    control: Tuple[str, ...] = ()
    mounts: Tuple[str, ...] = ()
    env: EnvPairs = ()
    pick_device: bool = False
    read_only: bool = False
    runtime: Optional[str] = None
    cap_add: Tuple[str, ...] = ()
    shm_size: Optional[str] = None
    ulimits: Tuple[str, ...] = ()
    lead: str = ""
    note: str = ""


class PodSpecField(Record):
    """A field of a Kubernetes pod spec: ``path`` dotted from the pod's ``spec``
    (``securityContext.runAsUser``, ``containers[0].env``) and its ``value``."""

    path: str
    value: str
    lead: str = ""
    note: str = ""


class SystemdSetting(Record):
    """``key=value`` in section ``section`` of systemd unit ``unit`` (a drop-in)."""

    unit: str
    key: str
    value: str
    section: str = "Service"
    lead: str = ""
    note: str = ""


class Reboot(Record):
    """Reboot the machine (after a driver or firmware install)."""

    lead: str = ""
    note: str = ""


class Prose(Record):
    """A step said in words (no command)."""

    text: str


Remedy = Union[
    InstallPackage,
    SourceFile,
    ComputedEnv,
    Export,
    PrependPath,
    PipInstall,
    PipUninstall,
    RunFile,
    Command,
    Pipeline,
    DockerFlags,
    PodSpecField,
    SystemdSetting,
    Reboot,
    Prose,
]

#: The classes of :data:`Remedy`, with the ``kind`` name each has in JSON.
KINDS = {
    InstallPackage: "install-package",
    SourceFile: "source",
    ComputedEnv: "computed-env",
    Export: "export",
    PrependPath: "prepend-path",
    PipInstall: "pip-install",
    PipUninstall: "pip-uninstall",
    RunFile: "run-file",
    Command: "command",
    Pipeline: "pipeline",
    DockerFlags: "docker-flags",
    PodSpecField: "pod-spec-field",
    SystemdSetting: "systemd-setting",
    Reboot: "reboot",
    Prose: "prose",
}
