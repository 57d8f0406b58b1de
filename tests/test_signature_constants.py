"""The constant names triage prints agree with the official error-code tables
(knowledge/data/error_codes/: acl_base.h and NPUErrorCodes.h for ACL, hccl_types.h for HCCL):
a signature never says a code means another code's constant."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

from npudoctor.knowledge.error_codes import LABEL_FAMILY, tables
from npudoctor.knowledge.signatures import load_kb
from npudoctor.triage import triage_text

KB = load_kb()
TABLES = tables()

#: A constant name of the ACL/runtime, HCCL or DCMI headers (``ACL_ERROR_FAILURE``, ``HCCL_E_PARA``).
CONSTANT = re.compile(r"\b(?:ACL|HCCL|DCMI)_[A-Z0-9_]*[A-Z0-9]\b")


def _owners() -> Dict[str, List[Tuple[str, str]]]:
    """constant name -> the (family, code) pairs whose official title is that name."""
    out: Dict[str, List[Tuple[str, str]]] = {}
    for family, codes in TABLES.items():
        for code, official in codes.items():
            for name in CONSTANT.findall(official.title):
                out.setdefault(name, []).append((family, code))
    return out


OWNERS = _owners()


def _contradictions() -> List[str]:
    out = []
    for e in KB.entries:
        family, _, fixed = e.label.partition(":")
        table = TABLES.get(LABEL_FAMILY.get(family, ""), {})
        # the fallback meanings of a code family ([entry.codes]): a named constant is that code's own
        for code, text in e.codes.items():
            official = table.get(code)
            for name in CONSTANT.findall(text):
                if official is not None and CONSTANT.search(official.title) and name != official.title:
                    out.append(f"{e.id} codes.{code}: {name}, the table says {official.title}")
        # a signature of one code (label "acl:500001"): no other code's constant in its words
        if not fixed or "{" in fixed:
            continue
        words = [e.title, e.meaning] + [c.text + " " + c.here for c in e.causes]
        for name in {n for w in words for n in CONSTANT.findall(w)}:
            others = [f"{f}:{c}" for f, c in OWNERS.get(name, []) if (f, c) != (LABEL_FAMILY.get(family), fixed)]
            if others and (LABEL_FAMILY.get(family, ""), fixed) not in OWNERS.get(name, []):
                out.append(f"{e.id} ({e.label}): {name} is {', '.join(others)}")
    return out


def test_signature_constants_agree_with_the_error_code_tables():
    assert _contradictions() == []


def test_the_tables_name_500001_and_500002_as_acl_base_h_does():
    # acl_base.h: ACL_ERROR_FAILURE = 500001; ACL_ERROR_GE_FAILURE = 500002
    assert TABLES["acl"]["500001"].title == "ACL_ERROR_FAILURE"
    assert TABLES["acl"]["500002"].title == "ACL_ERROR_GE_FAILURE"
    assert OWNERS["ACL_ERROR_GE_FAILURE"] == [("acl", "500002")]


def test_triage_of_500001_names_acl_error_failure():
    doc = triage_text("RuntimeError: AclSetCompileopt(ACL_PRECISION_MODE) error code is 500001\n")
    (group,) = [g for g in doc["known"] if g["label"] == "acl:500001"]
    assert "ACL_ERROR_FAILURE" in group["meaning"] and "ACL_ERROR_GE_FAILURE" not in group["meaning"]
