"""Code and Finding are plain classes (issue 18: ``explain`` imports no ``dataclasses``) with
the value semantics of the dataclasses they were: constructor defaults, equality by value,
repr naming every field, a frozen and hashable Code, an unhashable mutable Finding."""

from __future__ import annotations

import copy
import pickle

import pytest

from npudoctor.findings import Code, Finding, RegistryError
from npudoctor.knowledge import codes


def test_code_is_a_frozen_value() -> None:
    real = codes.get("PKG007")
    same = Code(real.code, real.name, real.area, real.severity, real.title, real.explain, real.kinds, real.symptom_of)
    assert same == real and hash(same) == hash(real) and {same, real} == {real}
    assert repr(real).startswith("Code(code='PKG007', name=") and "symptom_of=" in repr(real)
    with pytest.raises(AttributeError):
        real.severity = "info"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del real.title
    other = Code("PKG001", "torch-npu-torch-mismatch", "packages", "error", "t", "e")
    assert other.kinds == () and other.symptom_of == () and other != real
    assert pickle.loads(pickle.dumps(real)) == real and copy.deepcopy(real) == real


@pytest.mark.parametrize(
    "args, message",
    [
        (("PKG01", "a-name", "packages", "error"), "malformed finding code"),
        (("PKG001", "A_Name", "packages", "error"), "malformed finding name"),
        (("PKG001", "a-name", "nowhere", "error"), "unknown area"),
        (("PKG001", "a-name", "packages", "fatal"), "unknown severity"),
    ],
)
def test_a_malformed_code_is_refused(args: tuple, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        Code(*args, title="t", explain="e")


def test_finding_is_a_mutable_value() -> None:
    made = codes.get("PKG007").finding(evidence=["numpy 1.26.4"], subject="numpy")
    again = Finding.from_dict(made.to_dict())
    assert again == made and again.to_dict() == made.to_dict()
    again.severity = "warning"
    assert again != made
    bare = Finding("PKG007", "numpy-cann-undocumented", "info", "packages", "a title")
    assert (bare.evidence, bare.fix, bare.subject, bare.data, bare.after, bare.confirmed_by, bare.remedies) == (
        [],
        [],
        None,
        {},
        [],
        [],
        [],
    )
    assert Finding("A", "b", "info", "host", "t").evidence is not bare.evidence  # no shared default
    assert repr(bare).startswith("Finding(code='PKG007', name='numpy-cann-undocumented', severity='info'")
    with pytest.raises(TypeError):
        hash(bare)
    assert copy.deepcopy(made) == made
