"""Static evaluation of set_env.sh: the real CANN 8.0.0 script, 8.5/9.x idioms, bad input."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.host import Host
from npudoctor.parsers.set_env import evaluate

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE = (FIXTURES / "set_env_toolkit_8.0.0.sh.txt").read_text()
TK = "/usr/local/Ascend/ascend-toolkit/latest"


def test_cann_800_sample_exports_documented_variables():
    res = evaluate(
        SAMPLE,
        "/usr/local/Ascend/ascend-toolkit/set_env.sh",
        {"LD_LIBRARY_PATH": "/opt/x", "PATH": "/usr/bin"},
        arch="aarch64",
    )
    assert res.unsupported == []
    v = res.variables
    assert v["ASCEND_TOOLKIT_HOME"] == TK
    assert v["ASCEND_HOME_PATH"] == TK and v["ASCEND_AICPU_PATH"] == TK
    assert v["ASCEND_OPP_PATH"] == f"{TK}/opp"
    assert v["TOOLCHAIN_HOME"] == f"{TK}/toolkit"
    ld = v["LD_LIBRARY_PATH"].split(":")
    # the last export is prepended last: aml first, then the toolkit, then the driver, then the old value
    assert ld[:3] == [f"{TK}/tools/aml/lib64", f"{TK}/tools/aml/lib64/plugin", f"{TK}/lib64"]
    assert f"{TK}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/aarch64" in ld
    assert ld[-4:] == [
        "/usr/local/Ascend/driver/lib64",
        "/usr/local/Ascend/driver/lib64/common",
        "/usr/local/Ascend/driver/lib64/driver",
        "/opt/x",
    ]
    assert v["PYTHONPATH"] == f"{TK}/python/site-packages:{TK}/opp/built-in/op_impl/ai_core/tbe:"
    assert v["PATH"].endswith(":/usr/bin")
    assert res.exported[:2] == ["LD_LIBRARY_PATH", "ASCEND_TOOLKIT_HOME"]


def test_arch_follows_the_host():
    res = evaluate(SAMPLE, "/x/set_env.sh", {}, arch="x86_64")
    assert "op_tiling/lib/linux/x86_64" in res.variables["LD_LIBRARY_PATH"]


def test_self_location_grep_cut_and_conditionals(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/ascend_install.info").write_text("UserName=HwHiAiUser\nDriver_Install_Path_Param=/opt/Ascend\n")
    (tmp_path / "usr/local/Ascend/cann-8.5.0/lib64").mkdir(parents=True)
    script = """#!/bin/bash
CURRENT=$(cd "$(dirname "${BASH_SOURCE[0]}")"; pwd)
export ASCEND_TOOLKIT_HOME=${CURRENT}
driver_path=$(grep -iw driver_install_path_param /etc/ascend_install.info | cut -d"=" -f2)
if [ -d "${ASCEND_TOOLKIT_HOME}/lib64" ]; then
    export LD_LIBRARY_PATH=${ASCEND_TOOLKIT_HOME}/lib64:${driver_path}/driver/lib64:${LD_LIBRARY_PATH}
elif [ -n "$X" ]; then
    export NEVER=1
else
    export NEVER=2
fi
[ -d /nonexistent ] && export NEVER=3
[ -d /nonexistent ] || export FALLBACK=yes
export ARCH_DIR=${ASCEND_TOOLKIT_HOME}/$(uname -m)-linux PARENT=${CURRENT%/*} DEF=${UNSET_VAR:-dflt}
"""
    host = Host(root=str(tmp_path), environ={})
    res = evaluate(script, "/usr/local/Ascend/cann-8.5.0/set_env.sh", {}, arch="aarch64", fs=host)
    v = res.variables
    assert v["ASCEND_TOOLKIT_HOME"] == "/usr/local/Ascend/cann-8.5.0"
    assert v["LD_LIBRARY_PATH"] == "/usr/local/Ascend/cann-8.5.0/lib64:/opt/Ascend/driver/lib64:"
    assert "NEVER" not in v
    assert v["FALLBACK"] == "yes"
    assert v["ARCH_DIR"] == "/usr/local/Ascend/cann-8.5.0/aarch64-linux"
    assert v["PARENT"] == "/usr/local/Ascend"
    assert v["DEF"] == "dflt"
    assert res.unsupported == []


def test_unknown_constructs_are_listed_not_run():
    script = "export A=1\nexport B=$(python3 -c 'import torch')\nf() {\n export C=1\n}\nfor x in 1 2; do\n export D=$x\ndone\nexport E=$((1+2))\n"
    res = evaluate(script, "/s/set_env.sh", {})
    assert res.variables["A"] == "1"
    assert "C" not in res.variables and "D" not in res.variables
    texts = " | ".join(t for _n, t in res.unsupported)
    assert "python3" in texts and "function f" in texts and "for loop" in texts and "arithmetic" in texts


def test_source_follows_other_scripts(tmp_path):
    (tmp_path / "opt").mkdir()
    (tmp_path / "opt/inner.sh").write_text("export INNER=$(dirname ${BASH_SOURCE[0]})\n")
    host = Host(root=str(tmp_path), environ={})
    res = evaluate("source /opt/inner.sh\n. /opt/missing.sh\n", "/opt/outer.sh", {}, fs=host)
    assert res.variables["INNER"] == "/opt"
    assert res.sourced == ["/opt/inner.sh", "/opt/missing.sh"]
    assert any("missing.sh" in t for _n, t in res.unsupported)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("export $(){}[]\"'`;&|\\#=:-/ABCifthenfi\n\tx0")), max_size=200))
def test_fuzz_never_raises(text):
    res = evaluate(text, "/s/set_env.sh", {"PATH": "/bin"})
    assert isinstance(res.variables, dict)
