"""Typed views of the ``environment`` section (shape documented in
``npudoctor/probes/environment.py``): what ``set_env.sh`` would set against what the
diagnosed environment holds."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._view import View, field


class EnvToolkit(View):
    """The toolkit whose ``set_env.sh`` is interpreted."""

    path: Optional[str] = None
    version: Optional[str] = None
    resolved: Optional[str] = None
    source: Optional[str] = None
    set_env: Optional[str] = None


class ExpectedNnal(View):
    """What NNAL's ``set_env.sh`` would add."""

    atb_home: Optional[str] = None
    abi: Optional[int] = None
    abi_dirs: Tuple[str, ...] = ()
    script: Optional[str] = None


class UnsupportedLine(View):
    """A line of ``set_env.sh`` npudoctor could not interpret (``line`` < 1 in snapshots
    from before ``fallback``: the reason the documented variables were used)."""

    line: Optional[int] = None
    text: Optional[str] = None


class Expected(View):
    """What ``set_env.sh`` of the toolkit (and NNAL's) would set (read, never run)."""

    toolkit: Optional[str] = None
    method: Optional[str] = None
    '"set_env.sh" | "set_env.sh (rebased)" | "documented"'
    script: Optional[str] = None
    unsupported: Tuple[UnsupportedLine, ...] = ()
    fallback: Optional[str] = None
    """why the documented variables were used"""
    variables: Dict[str, str] = field(default_factory=dict)
    added: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    nnal: Optional[ExpectedNnal] = None
    driver: Optional[str] = None


class PathRead(View):
    """How the diagnosed root resolves one path the environment rules compare."""

    resolved: Optional[str] = None
    exists: Optional[bool] = None
    is_dir: Optional[bool] = None
    """None: not recorded (older snapshots)"""


class ToolkitPython(View):
    """CANN's own Python packages inside the toolkit."""

    site_packages: Optional[str] = None
    te: Optional[str] = None
    tbe: Optional[str] = None


class EnvNnal(View):
    """NNAL's variables: expected against current."""

    path: Optional[str] = None
    version: Optional[str] = None
    expected_atb_home: Optional[str] = None
    current_atb_home: Optional[str] = None
    current_abi: Optional[int] = None
    torch_cxx11_abi: Optional[bool] = None
    torch_abi_source: Optional[str] = None
    abi_dirs: Tuple[str, ...] = ()
    script: Optional[str] = None


class EnvironmentFacts(View):
    """What ``set_env.sh`` would set against what the diagnosed environment holds."""

    toolkit: Optional[EnvToolkit] = None
    expected: Optional[Expected] = None
    arch: Optional[str] = None
    arch_source: Optional[str] = None
    set_env_script: Optional[str] = None
    current: Dict[str, str] = field(default_factory=dict)
    paths: Dict[str, PathRead] = field(default_factory=dict)
    """how the root resolves each value compared (rules/_env_vars.py)"""
    toolkit_python: Optional[ToolkitPython] = None
    nnal: Optional[EnvNnal] = None
    torch_cxx11_abi: Optional[bool] = None
