"""Remedy steps run by a Python interpreter: the target interpreter (or the non-venv one
behind it), ``pip install``/``pip uninstall`` into it, and the uninstall of one given copy
of a distribution (:func:`uninstall_copy`).  They take the python view and
values, and judge nothing.
"""

from __future__ import annotations

import posixpath
from typing import Optional, Tuple

from npudoctor.facts.system import Distribution, PythonFacts
from npudoctor.remedies.steps import Interpreter, PipInstall, PipUninstall

#: Where the CPU builds of torch/torchvision/torchaudio live (the x86_64 torch_npu wheels
#: pin ``torch==X+cpu``: their METADATA on PyPI and the torch_npu README install lines).
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


def _user_home(location: str) -> Optional[str]:
    """``/home/dev`` of ``/home/dev/.local/lib/python3.10/site-packages``."""
    head, sep, _tail = location.partition("/.local/lib/")
    return head if sep and head.startswith("/") else None


def uninstall_copy(py: PythonFacts, name: str, rec: Distribution, keep_user_site: bool, same_dir: int) -> PipUninstall:
    """The remedy that uninstalls exactly ``rec`` (a copy of ``name``).

    ``pip uninstall`` removes the first copy on the running interpreter's sys.path (its
    RECORD lists every file, console scripts included), so the command picks the
    interpreter and flags that put ``rec`` first (checked with real pip 23 on CPython
    3.8, tests/test_packages_rules.py):

    * user site: the non-venv interpreter (pip in a venv refuses "outside environment")
      with ``HOME`` of that user site -- the user site precedes every site dir there;
    * the environment's own site dir: the target interpreter, with ``-s`` (no user site
      on sys.path) when a user-site copy is kept;
    * a system site dir seen by a venv (include-system-site-packages): the base
      interpreter with ``-s``;
    * any other directory (PYTHONPATH, a .pth entry): ``PYTHONPATH=<dir>`` puts it first.
    """
    loc = rec.location or ""
    what = f"{rec.name} {rec.version}"
    if same_dir > 1:
        what = f"one of the {same_dir} {rec.name} dist-infos"
    prefix = (py.prefix or "").rstrip("/")
    in_env = bool(prefix) and loc.startswith(prefix + "/")
    site_dir = posixpath.basename(loc.rstrip("/")) in ("site-packages", "dist-packages")
    if rec.user_site:
        home = _user_home(loc)
        return PipUninstall(
            base_interpreter(py, env=(("HOME", home),) if home else ()),
            (name,),
            site=loc,
            note=f"pip removes the first copy on sys.path, the user site's: {what} in {loc}",
        )
    if site_dir and (in_env or not py.is_venv):
        if keep_user_site:
            return PipUninstall(
                interpreter(py, flags=("-s",)),
                (name,),
                site=loc,
                note=f"-s hides the user site: removes {what} in {loc}",
            )
        return PipUninstall(interpreter(py), (name,), site=loc, note=f"removes {what} in {loc}")
    if site_dir:
        return PipUninstall(
            base_interpreter(py, flags=("-s",)),
            (name,),
            site=loc,
            note=f"the base interpreter (pip in the venv refuses): removes {what} in {loc}",
        )
    return PipUninstall(
        base_interpreter(py, flags=("-s",), env=(("PYTHONPATH", loc),)),
        (name,),
        site=loc,
        note=f"PYTHONPATH puts {loc} first: removes {what} there",
    )
