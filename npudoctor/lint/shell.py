"""Lint shell launch scripts (``.sh``, ``.bash``, notebook ``!`` lines) line by line: variables
only the CUDA stack reads and NVIDIA commands.  Comments are not code; a script that also sets
the NPU variable (written for both stacks) is not reported for the CUDA one."""

from __future__ import annotations

from typing import List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.lint.knowledge import LintKnowledge
from npudoctor.lint.rules import visible_devices_problem
from npudoctor.remedies.world import POD_RESOURCE

VISIBLE = "ASCEND_RT_VISIBLE_DEVICES"
_VALUE = lazyre.pattern(r"""("[^"]*"|'[^']*'|[^\s;&|)]*)""")

_ASSIGN = lazyre.pattern(r"(?:^|[\s;&|(])(?:export\s+|env\s+)?([A-Z][A-Z0-9_]*)=")
_BACKEND = lazyre.pattern(r"backend[=\s]+[\"']?(nccl)\b")
_WORD = lazyre.pattern(r"[A-Za-z0-9_.-]+")


def strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` outside quotes, at a word start)."""
    quote: Optional[str] = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;"):
            return line[:i]
    return line


def _visible(
    number: int, col: int, value: str, npus: Optional[int]
) -> List[Tuple[int, int, str, str, str, Optional[str]]]:
    problem = visible_devices_problem(value, npus)
    if problem is None:
        return []
    return [
        (
            number,
            col,
            "LNT018",
            f"{VISIBLE}={problem}",
            "comma-separated ascending IDs, no spaces, below the NPU count",
            None,
        )
    ]


def _backend(number: int, col: int) -> Tuple[int, int, str, str, str, Optional[str]]:
    """LNT002: ``nccl`` named as the distributed backend."""
    return (
        number,
        col,
        "LNT002",
        'backend "nccl" is NVIDIA\'s collective library; the NPU backend is "hccl"',
        "use hccl",
        None,
    )


def env_var(
    number: int, col: int, name: str, knowledge: LintKnowledge, whole: str
) -> List[Tuple[int, int, str, str, str, Optional[str]]]:
    """LNT013: a CUDA- or NCCL-named variable set, unless the text sets its NPU twin too."""
    var = knowledge.env_var(name)
    if var is None or (var.npu and var.npu in whole):
        return []
    if var.npu:
        return [(number, col, "LNT013", f"{name} is read by the CUDA stack only", f"use {var.npu}", None)]
    return [
        (
            number,
            col,
            "LNT013",
            f"{name} configures NCCL; HCCL does not read it",
            "remove it, or set the HCCL_* variable that matches",
            "info",
        )
    ]


def _tools(number: int, line: str, knowledge: LintKnowledge) -> List[Tuple[int, int, str, str, str, Optional[str]]]:
    """LNT014: NVIDIA's command-line tools named on the line."""
    out: List[Tuple[int, int, str, str, str, Optional[str]]] = []
    for m in _WORD.finditer(line):
        npu = knowledge.commands.get(m.group(0))
        if npu is not None:
            out.append(
                (
                    number,
                    m.start(),
                    "LNT014",
                    f"{m.group(0)} is an NVIDIA tool, absent on an Ascend host",
                    npu or "remove it (no NPU counterpart)",
                    None,
                )
            )
    return out


def scan_lines(
    lines: List[str], knowledge: LintKnowledge, whole: str, npus: Optional[int] = None
) -> List[Tuple[int, int, str, str, str, Optional[str]]]:
    """``(line, col, code, message, fix, severity)`` for each finding in ``lines``; ``whole``
    is the text the NPU variables are looked for in."""
    out: List[Tuple[int, int, str, str, str, Optional[str]]] = []
    for number, raw in enumerate(lines, 1):
        line = strip_comment(raw)
        if not line.strip():
            continue
        for m in _ASSIGN.finditer(line):
            name = m.group(1)
            if name == VISIBLE:
                value = _VALUE.match(line, m.end())
                out.extend(_visible(number, m.start(1), value.group(1) if value else "", npus))
            out.extend(env_var(number, m.start(1), name, knowledge, whole))
        for m in _BACKEND.finditer(line):
            out.append(_backend(number, m.start(1)))
        out.extend(_tools(number, line, knowledge))
    return out


_CONFIG_BACKEND = lazyre.pattern(
    r"""["']?(?:backend|dist_backend|dist-backend|distributed_backend|ddp_backend)["']?\s*[:=]\s*["']?(nccl)\b"""
)
_CONFIG_DEVICE = lazyre.pattern(
    r"""["']?(?:device|device_type|accelerator)["']?\s*[:=]\s*["']?(cuda(?::\d+)?)["']?\s*,?\s*$"""
)
_CONFIG_ENV_KEY = lazyre.pattern(r"""(?:^|[\s{,\-])["']?([A-Z][A-Z0-9_]*)["']?\s*[:=]""")
_CONFIG_ENV_NAME = lazyre.pattern(r"""\bname\s*:\s*["']?([A-Z][A-Z0-9_]*)""")


_CONFIG_BF16 = lazyre.pattern(
    r"""["']?(?:bf16|torch_dtype|dtype|compute_dtype|mixed_precision)["']?\s*[:=]\s*(?:\{\s*["']?enabled["']?\s*:\s*)?["']?(true|True|bfloat16|bf16)\b"""
)


#: A Kubernetes resource request or limit of NVIDIA GPUs.
_CONFIG_GPU = lazyre.pattern(r"""["']?(nvidia\.com/gpu)["']?\s*:\s*["']?(\d+)""")
#: A backend option and its value as items of a command list: ``["--backend", "nccl"]``.
_CONFIG_LIST_BACKEND = lazyre.pattern(r"""["']--?(?:dist[-_])?backend["']\s*,\s*["']?(nccl)\b""")
_CONFIG_ITEM = lazyre.pattern(r"""\s*-\s+["']?([^"'\s]+)["']?\s*$""")
_BACKEND_OPTIONS = {"--backend", "-backend", "--dist-backend", "--dist_backend"}


def gpu_resource(number: int, col: int, count: str) -> Tuple[int, int, str, str, str, Optional[str]]:
    """LNT022: ``nvidia.com/gpu: N`` requested."""
    return (
        number,
        col,
        "LNT022",
        f"nvidia.com/gpu: {count} asks NVIDIA's device plugin for GPUs; an Ascend node has none",
        f"request the Ascend device plugin's resource ({POD_RESOURCE}: {count} for 910-class NPUs)",
        None,
    )


_CONFIG_VISIBLE = lazyre.pattern(r"""["']?ASCEND_RT_VISIBLE_DEVICES["']?\s*[:=]\s*("[^"]*"|'[^']*'|[^\s,}#]+)""")


def scan_config(
    lines: List[str],
    knowledge: LintKnowledge,
    whole: str,
    no_bf16: Optional[str] = None,
    npus: Optional[int] = None,
) -> List[Tuple[int, int, str, str, str, Optional[str]]]:
    """YAML or JSON launcher configs (Kubernetes env lists, Hydra/Lightning/DeepSpeed-style
    keys): the distributed backend (a key, or an option and its value in a command list), the
    device, NVIDIA GPU resource requests, and the environment variables they set and commands
    they run, as for shell scripts."""
    out: List[Tuple[int, int, str, str, str, Optional[str]]] = []
    item = ""  # the previous item of a block list (``- --backend``)
    for number, raw in enumerate(lines, 1):
        line = strip_comment(raw) if not raw.lstrip().startswith(("{", "[", '"')) else raw
        if not line.strip():
            continue
        m = _CONFIG_BACKEND.search(line) or _CONFIG_LIST_BACKEND.search(line)
        if m:
            out.append(_backend(number, m.start(1)))
        m = _CONFIG_ITEM.match(line)
        if m and m.group(1) == "nccl" and item in _BACKEND_OPTIONS:
            out.append(_backend(number, m.start(1)))
        item = m.group(1) if m else ""
        m = _CONFIG_GPU.search(line)
        if m:
            out.append(gpu_resource(number, m.start(1), m.group(2)))
        m = _CONFIG_VISIBLE.search(line)
        if m:
            out.extend(_visible(number, m.start(), m.group(1), npus))
        m = _CONFIG_BF16.search(line) if no_bf16 else None
        if m and (m.group(1) in ("bfloat16", "bf16") or "bf16" in line[: m.start(1)]):
            out.append(
                (
                    number,
                    m.start(1),
                    "LNT017",
                    f"bfloat16 on this machine: {no_bf16}",
                    "use float16 (fp16: true, bf16: false)",
                    None,
                )
            )
        m = _CONFIG_DEVICE.search(line)
        if m:
            out.append(
                (
                    number,
                    m.start(1),
                    "LNT001",
                    f'device "{m.group(1)}" is a CUDA device; the NPU is "npu"',
                    f'use "npu{m.group(1)[4:]}"',
                    None,
                )
            )
        for m in list(_CONFIG_ENV_KEY.finditer(line)) + list(_CONFIG_ENV_NAME.finditer(line)):
            out.extend(env_var(number, m.start(1), m.group(1), knowledge, whole))
        out.extend(_tools(number, line, knowledge))
    return sorted(set(out))
