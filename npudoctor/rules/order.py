"""The order in which fixes must be applied when several layers of the stack are broken.

Ascend's own install order is driver and firmware → CANN toolkit → kernels/ops and
NNAL → ``set_env.sh`` → Python packages, the toolkit's ``set_env.sh`` being sourced already
before kernels/ops and NNAL are installed (:data:`APPLIES_ENV`,
:func:`npudoctor.remedies.cann.release_steps`).  A fix in an earlier layer changes what the later ones
must be: a new CANN brings its own ``set_env.sh``, numpy bound and kernels, a sourced
environment changes which shared libraries resolve, and the deep probe is only worth
re-running at the end.  Before all of them comes the decision which releases can run on
the NPU chips at all (DEV040: a framework or torch_npu release that does not support the
chip is replaced; the fixes computed from a replaced framework release -- its torch_npu, the
CANN paired with that -- are computed for the release that replaces it,
:mod:`npudoctor.rules._chipmove`).  This post-processor records that order in each finding's
``after`` list (codes of findings present in earlier layers), so the report prints one
ordered list instead of independent advice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.context import RuleContext
from npudoctor.findings import SEVERITIES, Finding, fix_of
from npudoctor.knowledge import codes
from npudoctor.rules import postprocess

if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

READS = ()

#: Layers in fix order; a code belongs to the first layer whose prefixes match it.  A
#: library fix comes after the packages: a reinstalled torch, torch_npu or extension
#: brings other binaries, whose needs are then the ones to meet.
LAYERS = (
    ("DEV040",),  # chip support: which framework / torch_npu release to install at all
    ("DRV",),
    ("CANN001", "CANN002", "CANN003", "CANN010", "CANN011", "CANN012"),
    ("CANN",),  # kernels/ops, NNAL, ATB ABI: installed on top of the toolkit
    ("ENV",),
    ("PY", "PKG"),
    ("LIB",),
    ("DEEP",),
)


#: What each layer of :data:`LAYERS` is called in the header of the fix list.
LAYER_NAMES = (
    "chip support",
    "driver",
    "CANN",
    "kernels/NNAL",
    "set_env.sh",
    "packages",
    "shared libraries",
    "import check",
)


def layer_of(code: str) -> int:
    """Index of the layer ``code`` belongs to, or -1 when its fix is independent."""
    for index, prefixes in enumerate(LAYERS):
        if any(code.startswith(p) for p in prefixes):
            return index
    return -1


#: A finding whose fix installs a whole CANN release (toolkit, kernels/ops and NNAL of
#: that release: CANN001 when none is installed, CANN012 for a newer one) covers the
#: kernels/NNAL findings about the release installed now.
REPLACES_CANN = ("CANN001", "CANN012")
COVERED_BY_NEW_CANN = ("CANN004", "CANN005", "CANN006", "CANN007", "CANN008", "CANN009")


def _folds() -> Dict[str, Tuple[str, ...]]:
    """:data:`FOLDS`: a finding's ``after`` lists the fixable findings of earlier layers
    (and ``superseded_by`` a CANN one), so each layer's area depends on the earlier ones'."""
    areas = [sorted({str(codes.area_of(p if p[-1].isdigit() else p + "000")) for p in layer}) for layer in LAYERS]
    folds: Dict[str, Tuple[str, ...]] = {}
    for index, mine in enumerate(areas):
        earlier = {a for layer in areas[: index + 1] for a in layer}
        for area in mine:
            folds[area] = tuple(sorted(set(folds.get(area, ())) | earlier - {area}))
    return folds


#: Findings of an area (key) whose content depends on which findings of other areas (value)
#: are reported (:func:`npudoctor.engine.rule_modules`); :func:`fold_symptoms` adds each
#: code's ``symptom_of`` (codes data), which the registry generator reads itself.
FOLDS = _folds()


@postprocess
def fix_order(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """Add to ``after`` the codes of fixable findings in earlier layers, and mark the
    kernels/NNAL findings a new-CANN fix covers (``data["superseded_by"]``)."""
    replacing = next((f.code for f in findings if f.code in REPLACES_CANN and f.fix and f.severity == "error"), None)
    if replacing:
        for f in findings:
            if f.code in COVERED_BY_NEW_CANN:
                f.data["superseded_by"] = replacing
                if f.fix:
                    _put_prose(
                        f,
                        len(f.fix),
                        f"not needed if you install the whole CANN release that the fix of {replacing} names "
                        "(its kernels/ops and NNAL come with it)",
                    )
    fixable = [f for f in findings if f.fix and f.severity != "info" and layer_of(f.code) >= 0]
    by_layer: Dict[int, List[str]] = {}
    for f in fixable:
        by_layer.setdefault(layer_of(f.code), []).append(f.code)
    for f in fixable:
        earlier = [c for layer, codes in sorted(by_layer.items()) if layer < layer_of(f.code) for c in codes]
        f.after = list(dict.fromkeys(f.after + earlier))
    _source_once(fixable)
    return findings


def _put_prose(f: Finding, index: int, text: str) -> None:
    """Make line ``index`` of ``f``'s fix (its text and its remedy) the prose ``text``: the
    line there is replaced, or, at ``len(f.fix)``, the line is added at the end."""
    from npudoctor.remedies import Prose, shell_lines, to_dict

    step = Prose(text)
    line = shell_lines([step])[0]
    f.fix = f.fix[:index] + [line] + f.fix[index + 1 :]
    f.remedies = f.remedies[:index] + [dict(to_dict(step), shell=line)] + f.remedies[index + 1 :]


#: The findings whose fix applies an environment that is not in effect -- the toolkit's
#: set_env.sh (ENV001), NNAL's (ENV005) -- and where an add-on install (kernels/ops, NNAL)
#: needs that step: ``before`` it (the kernels installer needs the toolkit's environment:
#: Ascend/docs pull request 69, "Before installing kernels, make sure you source
#: set_env.sh") or ``after`` it (NNAL's set_env.sh applies what the NNAL install put there).
APPLIES_ENV = {"ENV001": ("before", "the toolkit's environment"), "ENV005": ("after", "NNAL's environment")}


def _command(f: Finding, index: int) -> Optional[str]:
    """The command of fix line ``index`` of ``f`` (without its comment), or ``None`` for prose."""
    if index < len(f.remedies) and f.remedies[index].get("shell") == f.fix[index]:
        command = f.remedies[index].get("command")
        return command if isinstance(command, str) else None
    return None


def _source_once(fixable: List[Finding]) -> None:
    """An add-on install whose fix prints the same command as the fix of a reported
    :data:`APPLIES_ENV` finding (the environment not applied): the add-on's step refers to
    that finding instead of printing the command again (one cause, one command), and the
    two go in the order the add-on needs."""
    addon = layer_of("CANN004")
    for env in fixable:
        when, what = APPLIES_ENV.get(env.code, ("", ""))
        command = _command(env, 0) if when and env.fix else None
        if command is None:
            continue
        for f in fixable:
            if layer_of(f.code) != addon:
                continue
            hit = next((i for i in range(len(f.fix)) if _command(f, i) == command), None)
            if hit is None:
                continue
            if when == "before":
                text = f"in the shell where {what} is applied {fix_of(env.code)}:"
                f.after = [c for c in f.after if c != env.code] + [env.code]
                env.after = [c for c in env.after if c != f.code]
            else:
                # "then" only after a step of this fix (CANN009's whole fix is that environment)
                text = f"{'then apply' if hit else 'apply'} {what} {fix_of(env.code)}"
                env.after = [c for c in env.after if c != f.code] + [f.code]
                f.after = [c for c in f.after if c != env.code]
            _put_prose(f, hit, text)


@postprocess
def fold_symptoms(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """Name each follow-on symptom's root cause in ``data["because"]``: the cause a rule
    named there, else a reported finding that names the symptom's code in its
    ``data["explains"]`` (a cause whose fix also mends that symptom), else the first code of
    its code's ``symptom_of`` (codes data), when a finding of that code is reported and at
    least as severe (a note never hides an error).  A named cause that is not reported is
    dropped, so ``because`` always names a finding of the same report (the text report
    folds the symptom under it and the fix list leaves it out)."""
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    worst: Dict[str, int] = {}
    explained: Dict[str, List[str]] = {}
    for f in findings:
        worst[f.code] = min(worst.get(f.code, len(SEVERITIES)), rank[f.severity])
        for code in f.data.get("explains") or ():
            explained.setdefault(str(code), []).append(f.code)
    for f in findings:
        named = f.data.get("because")
        candidates = ([named] if isinstance(named, str) else []) + explained.get(f.code, [])
        candidates += list(codes.get(f.code).symptom_of)
        cause = next((c for c in candidates if c != f.code and worst.get(c, len(SEVERITIES)) <= rank[f.severity]), None)
        if cause is None:
            f.data.pop("because", None)
        else:
            f.data["because"] = cause
    return findings
