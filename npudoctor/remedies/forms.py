"""The other output forms of remedies: Dockerfile lines, a pod-spec YAML fragment,
Markdown, and the structured dict of a finding's ``remedies`` list in JSON.

Each step that has no meaning in a form (a reboot in a Dockerfile, a ``docker run`` flag
in a pod spec) becomes a comment there, so nothing a rule recommends is lost.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

import msgspec

from npudoctor.remedies.render import command, docker_words, shell
from npudoctor.remedies.steps import (
    KINDS,
    ComputedEnv,
    DockerFlags,
    Export,
    PodSpecField,
    Prose,
    Reboot,
    Remedy,
    SourceFile,
    SystemdSetting,
)


def _plain(value: Any) -> Any:
    """Tuples as JSON-ready lists, in the dicts ``msgspec.to_builtins`` made of the records."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def to_dict(remedy: Remedy) -> Dict[str, Any]:
    """``{"kind": "pip-install", "shell": "<the fix line>", "command": ..., <the fields>}``
    of a remedy (the items of a finding's ``remedies`` list in ``check --json``).
    ``command`` is the bare pasteable part of the line (no lead, no note; the flags of a
    ``docker-flags`` step), ``None`` when the step is prose."""
    fields = _plain(msgspec.to_builtins(remedy))
    out: Dict[str, Any] = {"kind": KINDS[type(remedy)], "shell": shell(remedy), "command": command(remedy)}
    out.update(fields)
    return out


def _comment(text: str) -> str:
    return "# " + " ".join(text.split())


def dockerfile(remedies: Sequence[Remedy]) -> List[str]:
    """Dockerfile lines for ``remedies``: ``RUN`` for commands, ``ENV`` for exports,
    comments for what an image build cannot do (reboot, docker run flags, pod-spec
    fields, systemd, prose).  A set_env.sh does not persist across ``RUN`` steps, so a
    :class:`SourceFile` becomes a comment telling how to apply it."""
    out: List[str] = []
    for r in remedies:
        if isinstance(r, Prose):
            out.append(_comment(r.text))
        elif isinstance(r, Export):
            if r.value is None:
                out.append(_comment(shell(r)))
            else:
                out.append(f"ENV {r.var}={json.dumps(r.value)}")
        elif isinstance(r, SourceFile):
            out.append(
                _comment(
                    f"{r.path} does not persist across RUN steps: start each RUN that needs it with "
                    f'"source {r.path} &&", or turn its variables into ENV lines (npudoctor env --format dockerfile)'
                )
            )
        elif isinstance(r, ComputedEnv):
            out.append(_comment(f"apply the CANN environment: {shell(r)}"))
        elif isinstance(r, Reboot):
            out.append(_comment("reboot the host after the driver/firmware install (not part of an image)"))
        elif isinstance(r, DockerFlags):
            out.append(_comment("docker run flags for this image: " + shell(r)))
        elif isinstance(r, (PodSpecField, SystemdSetting)):
            out.append(_comment(shell(r)))
        else:
            cmd = command(r)
            out.append(f"RUN {cmd}" if cmd else _comment(shell(r)))
    return out


def _yaml_scalar(value: str) -> str:
    return json.dumps(value)


def _path_parts(path: str) -> List[str]:
    """``containers[0].securityContext.runAsUser`` → ``["containers[0]", "securityContext", "runAsUser"]``."""
    return [p for p in path.split(".") if p]


def podspec(remedies: Sequence[Remedy]) -> str:
    """A YAML fragment of a pod's ``spec`` holding the pod-spec fields and (under the
    first container's ``env``) the exports of ``remedies``; the other steps follow as
    comments.  Paths like ``containers[0].x`` address the first container."""
    tree: Dict[str, Any] = {}
    comments: List[str] = []
    env: List[Dict[str, str]] = []
    for r in remedies:
        if isinstance(r, PodSpecField):
            node = tree
            parts = _path_parts(r.path)
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = r.value
        elif isinstance(r, Export) and r.value is not None:
            env.append({"name": r.var, "value": r.value})
        elif isinstance(r, DockerFlags):
            comments.append(
                _comment("devices come from the Ascend device plugin, not docker flags: " + " ".join(docker_words(r)))
            )
        else:
            comments.append(_comment(shell(r)))
    if env:
        tree.setdefault("containers[0]", {})["env"] = env
    lines: List[str] = []

    def emit(node: Dict[str, Any], indent: int) -> None:
        pad = " " * indent
        for key, value in node.items():
            if key.endswith("[0]"):
                lines.append(f"{pad}{key[:-3]}:")
                lines.append(f"{pad}- # the first container")
                emit(value, indent + 2)
            elif isinstance(value, dict):
                lines.append(f"{pad}{key}:")
                emit(value, indent + 2)
            elif isinstance(value, list):
                lines.append(f"{pad}{key}:")
                for item in value:
                    lines.append(f"{pad}- name: {_yaml_scalar(item['name'])}")
                    lines.append(f"{pad}  value: {_yaml_scalar(item['value'])}")
            else:
                lines.append(f"{pad}{key}: {_yaml_scalar(str(value))}")

    emit(tree, 0)
    return "\n".join(comments + lines) + "\n"


def markdown(remedies: Sequence[Remedy]) -> str:
    """A Markdown list of ``remedies``: prose as text, each command in a code span,
    its lead before it and its note after it."""
    out: List[str] = []
    for r in remedies:
        if isinstance(r, Prose):
            out.append(f"- {r.text}")
            continue
        cmd = command(r)
        if cmd is None or isinstance(r, PodSpecField):
            out.append(f"- {shell(r).strip()}")
            continue
        lead = r.lead.strip()
        text = f"{lead} `{cmd}`" if lead else f"`{cmd}`"
        if r.note:
            text += f" ({r.note})"
        out.append(f"- {text}")
    return "\n".join(out) + ("\n" if out else "")
