"""Rules: pure functions ``(RuleContext) -> Iterable[Finding]``, one module per area.

Register a rule with the :func:`rule` decorator.  Each module declares, after its imports::

    READS = ("cann", "packages")  # every section its rules and post-processors read
    ONLY_WITH = ("cann",)         # optional: it says nothing unless one of these was probed
    FOLDS = {"container": ("driver",)}  # optional: findings of an area that depend on which
                                        # findings of others are reported (folded, ordered)

A module is imported only when a snapshot needs it (:func:`npudoctor.engine.rule_modules`:
no ``ONLY_WITH``, or one of those sections present), from the generated registry
``npudoctor/_registry.py``: after adding a module, a rule or a declaration, run
``python scripts/gen_registry.py --write``.  ``tests/test_rule_registry.py`` checks the
declarations against what the modules read on every scenario.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import Command

if TYPE_CHECKING:
    from typing import Callable, Iterable, List, Tuple

    RuleFunc = Callable[..., Iterable[Finding]]

#: ``(qualified name, function)`` of every registered rule, in registration order.
RULES: List[Tuple[str, RuleFunc]] = []

#: Post-processors ``(ctx, findings) -> findings`` run after all rules, in
#: registration order (e.g. the deep probe marks static findings "confirmed by import").
POSTPROCESSORS: List[Tuple[str, Callable[..., List[Finding]]]] = []


def rule(func: RuleFunc) -> RuleFunc:
    """Register ``func`` as a rule (idempotent: re-registration is ignored)."""
    name = f"{func.__module__.rsplit('.', 1)[-1]}.{func.__name__}"
    if all(existing != name for existing, _ in RULES):
        RULES.append((name, func))
    return func


def postprocess(func: Callable[..., List[Finding]]) -> Callable[..., List[Finding]]:
    """Register ``func(ctx, findings) -> findings`` to run after every rule."""
    name = f"{func.__module__.rsplit('.', 1)[-1]}.{func.__name__}"
    if all(existing != name for existing, _ in POSTPROCESSORS):
        POSTPROCESSORS.append((name, func))
    return func


INTERNAL = codes.get("HOST099")


def internal_error(where: str, exc: object) -> Finding:
    """A finding for a crashed probe or rule (``where`` names it)."""
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    first = str(text).strip().splitlines()[0] if str(text).strip() else "unknown error"
    return INTERNAL.finding(
        title=f"npudoctor failed in {where}: {first}",
        evidence=[str(text).strip()],
        fix=[Command(("npudoctor", "check", "--markdown"), lead="Please report this with the output of: ")],
        subject=where,
    )
