"""Focused tests of the pieces added for the K01/K05/K09 case scenarios: the framework
table (npudoctor/rules/_frameworks.py) and the pip configuration facts (K09).  The
end-to-end checks are the case<NN>-* scenarios (tests/builders/build_case_scenarios.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npudoctor.host import Host
from npudoctor.knowledge.frameworks import npu_fits, rows_for
from npudoctor.probes.packages import _pip_conf, pip_config


@pytest.mark.parametrize(
    "installed, documented, fits",
    [
        ("2.5.1rc1", "2.5.1.dev20250218", False),  # PEP 440 says rc1 is newer: it is not the build (vllm-ascend#340)
        ("2.5.1.dev20250308", "2.5.1.dev20250218", True),
        ("2.5.1.dev20250101", "2.5.1.dev20250218", False),
        ("2.5.1", "2.5.1.dev20250218", None),
        ("2.1.0.post4", "2.1.0.post5", False),  # Ascend/pytorch#37
        ("2.1.0.post6", "2.1.0.post5", True),
        ("2.4.0", "2.5.1", False),
        ("garbage", "2.5.1", None),
    ],
)
def test_npu_fits(installed, documented, fits):
    assert npu_fits(installed, documented) is fits


@pytest.mark.parametrize(
    "version, torch_npu, cann",
    [
        ("0.7.1rc1", "2.5.1.dev20250218", "8.0.0"),
        ("0.7.3rc2", "2.5.1.dev20250308", "8.0.0"),
        ("0.7.3", "2.5.1", "8.1.RC1"),
        ("0.8.4rc2", "2.5.1", "8.0.0"),  # the exact row wins over the v0.7.3-v0.9.0rc2 range
        ("0.8.4rc2.dev4+g5442b46", "2.5.1", "8.0.0"),  # a source checkout counts as its release
        ("0.11.0", "2.7.1.post1", "8.3.RC2"),
    ],
)
def test_vllm_ascend_rows(version, torch_npu, cann):
    (row,) = rows_for("vllm-ascend", version)
    assert (row.torch_npu, row.cann_min) == (torch_npu, cann)


def test_rows_unknown_and_mindie_spelling():
    assert rows_for("vllm-ascend", "0.5.0") == []
    assert rows_for("vllm-ascend", "not a version") == []
    assert rows_for("atb-models", "1.0.RC2.B010")[0].torch_npu == "2.1.0.post5"
    assert rows_for("mindie", "2.1.RC1")[0].ext == "7.1.0"
    assert rows_for("mindie", "2.1.RC10") == []


def test_pip_conf_sections_and_garbage():
    conf = _pip_conf("[global]\nindex-url = https://m.example/simple\n[install]\nextra-index-url = a b\n")
    assert conf == {"index-url": "https://m.example/simple", "extra-index-url": ["a", "b"]}
    with pytest.raises(ValueError):
        _pip_conf("index-url = no section header\n")


def test_pip_config_precedence(tmp_path: Path):
    root = tmp_path
    (root / "etc").mkdir()
    (root / "etc/pip.conf").write_text("[global]\nindex-url = https://global.example/simple\n")
    (root / "home/u/.config/pip").mkdir(parents=True)
    (root / "home/u/.config/pip/pip.conf").write_text("[global]\nindex-url = https://user.example/simple\n")
    (root / "opt/env").mkdir(parents=True)
    (root / "opt/env/pip.conf").write_bytes(b"\xff\xfe[[[ not ini")
    host = Host(root=str(root), environ={"HOME": "/home/u"})
    got = pip_config(host, {"prefix": "/opt/env"})
    assert got["index_url"] == "https://user.example/simple"
    assert got["index_source"] == "/home/u/.config/pip/pip.conf"
    assert got["files"] == ["/etc/pip.conf", "/home/u/.config/pip/pip.conf", "/opt/env/pip.conf"]
    assert got["errors"] and got["errors"][0].startswith("/opt/env/pip.conf: garbled")
    host = Host(root=str(root), environ={"HOME": "/home/u", "PIP_INDEX_URL": "https://env.example/simple"})
    got = pip_config(host, {})
    assert (got["index_url"], got["index_source"]) == ("https://env.example/simple", "PIP_INDEX_URL")
