"""Remedy steps run by a Python interpreter: the target interpreter (or the non-venv one
behind it) and ``pip install``/``pip uninstall`` into it.  They take the python view and
values, and judge nothing.
"""

from __future__ import annotations

from typing import Optional, Tuple

from npudoctor.facts.system import PythonFacts
from npudoctor.remedies.steps import Interpreter, PipInstall, PipUninstall

#: Where the CPU builds of torch/torchvision/torchaudio live (the x86_64 torch_npu wheels
#: pin ``torch==X+cpu``; REPORT §2 and the torch_npu README install lines).
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def interpreter(py: PythonFacts, flags: Tuple[str, ...] = (), env: Tuple[Tuple[str, str], ...] = ()) -> Interpreter:
    """The target interpreter (:attr:`PythonFacts.interpreter_path`) as a remedy's
    :class:`Interpreter`."""
    return Interpreter(py.interpreter_path, flags=flags, env=env)


def base_interpreter(
    py: PythonFacts, flags: Tuple[str, ...] = (), env: Tuple[Tuple[str, str], ...] = ()
) -> Interpreter:
    """The non-venv interpreter behind the target: the target itself when it is not a
    venv, else ``base_executable`` or ``<base_prefix>/bin/pythonX.Y``.
    pip run by it treats the user site and the system site-packages as its own (pip run
    inside a venv refuses to uninstall outside the venv: "Not uninstalling … outside
    environment")."""
    exe: Optional[str] = None
    if py.is_venv:
        exe = py.base_executable
        if not exe and py.base_prefix:
            exe = py.base_prefix.rstrip("/") + "/bin/python" + (py.short or "3")
    return Interpreter(exe if exe else py.interpreter_path, flags=flags, env=env)


def pip_install(
    py: PythonFacts,
    *requirements: str,
    index: Optional[str] = None,
    options: Tuple[str, ...] = (),
    lead: str = "",
    note: str = "",
) -> PipInstall:
    """The remedy ``<python> -m pip install 'req' ... [--index-url index] [options]``
    for the target interpreter ``py``."""
    return PipInstall(interpreter(py), tuple(requirements), index_url=index, options=options, lead=lead, note=note)


def pip_uninstall(py: PythonFacts, *names: str) -> PipUninstall:
    """The remedy ``<python> -m pip uninstall -y name ...`` for the target interpreter ``py``."""
    return PipUninstall(interpreter(py), tuple(names))
