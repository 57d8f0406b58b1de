"""Honest unknown (issue 29, AUDIT §7 (e)): a chip name the catalogue lacks, or a torch_npu /
CANN release newer than the data, is a warning that names the data's date and the refresh;
never silence, never an error.  A build the data merely lacks (older than its newest row)
stays informational."""

from __future__ import annotations

from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.snapshot import Snapshot


def _findings(facts):
    m = load_matrix()
    snap = Snapshot(facts=facts, matrix=dict(m.provenance))
    return {f.code: f for f in evaluate(snap, m, Options())}, m


def test_an_unknown_chip_is_a_warning_naming_the_data_date_and_the_refresh():
    found, m = _findings({"devices": {"chips": [{"name": "910C9"}, {"name": "910B3"}]}})
    f = found["DEV042"]
    when = m.provenance["retrieved"]
    assert f.severity == "warning" and f.subject == "910C9"
    assert f.title == (
        f"NPU chip '910C9' is not in the chip catalogue of the matrix in use (data of {when}): "
        "its family, chip support and bf16 are not judged"
    )
    assert f.fix[0].startswith("npudoctor matrix refresh   # chip 910C9 is not in the compatibility matrix in use")


def _packages(torch_npu, torch="2.9.0"):
    rec = {"location": "/usr/lib/python3/site-packages"}
    return {
        "packages": {
            "installed": {
                "torch": [dict(rec, name="torch", version=torch)],
                "torch-npu": [dict(rec, name="torch_npu", version=torch_npu)],
            }
        }
    }


def test_a_torch_npu_newer_than_the_data_is_a_warning_naming_its_date():
    found, m = _findings(_packages("2.99.0", torch="2.99.0"))
    f = found["MTX003"]
    when = m.provenance["retrieved"]
    assert f.severity == "warning"
    assert f.title == (
        f"torch_npu 2.99.0 is newer than the compatibility matrix in use (data of {when}); "
        "its pairings cannot be checked until `npudoctor matrix refresh`"
    )
    assert f.data["newer_than_data"] is True


def test_a_build_the_data_lacks_but_does_not_predate_stays_info():
    found, _m = _findings(_packages("2.9.0.post77"))
    assert found["MTX003"].severity == "info" and "newer than" not in found["MTX003"].title
