"""Pre-release and dev torch_npu builds judged by the CANN their OWN wheel metadata names,
for builds the matrix has no row for (mirror builds, or an rc newer than the
bundled matrix).

A torch_npu wheel's description (its README, the METADATA body) has a table row for the
wheel's own version naming the CANN it was built for: 2.4.0rc1 ``| CANN 8.0.RC3.alpha001 |
2.4.0 | 2.4.0rc1 | v2.4.0 |``.  The probe reads that row
(npudoctor/probes/frameworks.py); :func:`metadata_verdict` grades the CANN in use against it
with the one verdict model (:mod:`npudoctor.knowledge.grades`).  The rc's CANN is often an
alpha of an EARLIER line than the final X.Y.Z build's (2.5.1rc1: 8.0.0.alpha001; 2.5.1:
8.1.RC1), so the base line's pairing is not borrowed.  Data with the rows of the 14 PyPI
release candidates: npudoctor/knowledge/data/frameworks/prerelease_torch_npu.toml.
"""

from __future__ import annotations

from typing import Optional

from npudoctor.knowledge.grades import Grade, Verdict
from npudoctor.knowledge.versions import parse_cann


def _core(text: str) -> Optional[str]:
    v = parse_cann(text)
    if v is None:
        return None
    return ".".join(v.release.split(".")[:3]).lower()


def metadata_verdict(torch_npu: str, named: Optional[str], row: Optional[str], cann: str) -> Optional[Verdict]:
    """How CANN ``cann`` fits torch_npu ``torch_npu`` by the wheel's own description row
    ``row`` naming CANN ``named``: the same CANN -> declared compatible ("declared by the
    wheel's own METADATA"); the same release (``8.0.RC3`` for ``8.0.RC3.alpha001``) -> same
    release line, unofficial (a pre-release build); another CANN -> not documented either way,
    ``window`` naming the wheel's CANN.  ``None`` when the row names no CANN.  Never raises."""
    if not named:
        return None
    quoted = f"'{row}'" if row else f"CANN {named}"
    source = f"the wheel's own METADATA description names CANN {named} for torch_npu {torch_npu}: {quoted}"
    a, b = _core(named), _core(cann)
    if named.strip().lower() == cann.strip().lower():
        return Verdict(Grade.DECLARED, "declared compatible by " + source)
    if a is not None and a == b:
        return Verdict(Grade.SAME_LINE, source, unofficial=True, window=f"CANN {named}")
    return Verdict(Grade.UNDOCUMENTED, source, window=f"CANN {named} (the wheel's own metadata)")
