"""Runtime tunables (issue 33): the data table, the readers' parsers and the rules, on real
trees (stacktree) with a replayed `npu-smi info` capture for the chip."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Optional, Tuple

import pytest
from builders.build_cann_scenarios import fixture, write
from builders.stacktree import build_root

from npudoctor import tomlread
from npudoctor.context import Options
from npudoctor.engine import collect, evaluate
from npudoctor.host import Host
from npudoctor.knowledge import tunables
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.parsers.numbers import strtol

A2_TABLE = "npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt"
A3_TABLE = "npu-smi-info_A3_Ascend910_910_93_24.1.rc3.7_8npu16chip_noproc.txt"
DUO_TABLE = "npu-smi-info_310P3-Duo_25.2.0_1card2chip_noproc.txt"
ENV_CODES = ("ENV008", "ENV009", "ENV010", "ENV011", "ENV012")


# --------------------------------------------------------------------------- the table
def test_every_record_names_its_source():
    t = tunables.table()
    assert t.retrieved == "2026-12-06"
    for var in t.variables.values():
        assert var.source.strip(), var.name
    for key in t.alloc_keys.values():
        assert key.source.strip() and key.since, key.name
    for twin in t.twins.values():
        assert twin.source.strip(), twin.name
    assert all(reason.strip() for reason in t.not_judged.values())


def test_every_documented_variable_is_judged_or_listed():
    t = tunables.table()
    by_name = {ref.name: ref for ref in t.references}
    torch_ref = by_name["Ascend/pytorch environment-variable reference"]
    hccl_ref = by_name["HCCL environment-variable reference (CANN, collective communication)"]
    assert torch_ref.source.startswith("https://github.com/Ascend/pytorch/")
    assert hccl_ref.source.startswith("https://github.com/hicann/hccl/")
    # the lists as published at the recorded commits (49 and 37 pages)
    assert (len(torch_ref.names), len(hccl_ref.names)) == (49, 37)
    assert {"TORCH_HCCL_ASYNC_ERROR_HANDLING", "TORCH_NPU_LAZY_FUSION"} <= set(torch_ref.names)
    assert {"HCCL_EXEC_TIMEOUT", "HCCL_RDMA_TIMEOUT", "HCCL_OP_EXPANSION_MODE"} <= set(hccl_ref.names)
    ge_ref = by_name[
        "CANN graph-engine environment-variable reference (graph compilation, operator compilation, graph execution)"
    ]
    prof_ref = by_name["CANN profiling environment-variable reference"]
    assert ge_ref.source.startswith("https://github.com/hicann/ge/") and len(ge_ref.commit) == 40
    assert prof_ref.source.startswith("https://github.com/hicann/oam-tools/") and len(prof_ref.commit) == 40
    # the GE reference's README lists 18 pages (图编译 10, 算子编译 4, 图执行 2, to be deprecated 2)
    assert (len(ge_ref.names), sorted(prof_ref.names)) == (18, ["PROFILING_MODE", "PROFILING_OPTIONS"])
    # the CANN 9.0.0 list's other sections, one reference each
    cann900 = {r.name.split(": ", 1)[1]: r for r in t.references if r.name.startswith("CANN 9.0.0 ")}
    assert {name: len(r.names) for name, r in cann900.items()} == {
        "resources": 4,
        "operator execution": 1,
        "fault-information collection and exception dump": 3,
        "TF Adapter": 19,
        "AOE tuning": 3,
        "AMCT model compression": 4,
    }
    assert all("canncommercial/900/maintenref/envvar/envref_07_0001.html" in r.source for r in cann900.values())
    assert {"TE_PARALLEL_COMPILER", "ASCEND_REMAIN_CACHE_SIZE_RATIO", "ASCEND_MAX_OP_CACHE_SIZE"} <= set(t.variables)
    judged = set(t.variables) | set(t.twins)
    for ref in t.references:
        assert ref.source.strip() and ref.retrieved == "2026-12-06" and ref.names, ref.name
        assert len(set(ref.names)) == len(ref.names), ref.name
        missing = [n for n in ref.names if n not in judged and n not in t.not_judged]
        assert missing == [], ref.name
    # nothing is both judged and listed as not judged
    assert sorted(judged & set(t.not_judged)) == []


def test_table_record_shapes():
    doc = tomlread.loads(Path(tunables.data_path()).read_text())
    for raw in doc["variable"]:
        assert raw["grammar"] in (
            "bool",
            "choice",
            "word",
            "alloc",
            "int_min",
            "int_range",
            "affinity",
            "dir_parent",
            "above",
            "hccl_range",
            "set",
        ), raw["name"]
        assert raw.get("outside", "warning") in ("error", "warning"), raw["name"]
        assert raw.get("outside_acts_as", "") in ("", "default", "max"), raw["name"]
        assert all(raw["min"] <= v <= raw["max"] for v in raw.get("excluded", ())), raw["name"]
        if raw.get("outside_acts_as"):
            assert raw["grammar"] == "int_range" and raw["min"] <= int(raw["default"]) <= raw["max"], raw["name"]
        if raw["grammar"] == "choice":
            assert int(raw["default"]) in raw["values"], raw["name"]
        if raw["grammar"] == "hccl_range":
            assert any(r["name"] == raw["name"] for r in doc["hccl_range"]), raw["name"]
    t = tunables.table()
    for rec in t.hccl_ranges:
        assert t.variables[rec.name].grammar == "hccl_range" and rec.source.strip(), rec.name
        assert rec.minimum <= rec.maximum and set(rec.chips) <= {"910", "910b", "A3", "310p", "950"}, rec.name
    for chip, modes in t.hccl_modes.items():
        assert modes.default in modes.modes and modes.source.startswith("https://"), chip


# --------------------------------------------------------------------------- readers
@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", (1, True)),
        ("true", (0, False)),
        (" 2", (2, True)),
        ("2x", (2, False)),
        ("-3", (-3, True)),
        ("", (0, False)),
        ("9" * 5000, ((1 << 63) - 1, True)),  # clamped like C, never Python's digit limit
        ("-" + "9" * 40 + "x", (-(1 << 63), False)),
        ("007", (7, True)),
    ],
)
def test_strtol(text, expected):
    assert strtol(text) == expected


def test_alloc_pairs_tokenise_like_torch_npu():
    pairs, bad = tunables.alloc_pairs("expandable_segments: True , max_split_size_mb:128")
    assert pairs == [("expandable_segments", "True"), ("max_split_size_mb", "128")] and bad == []
    pairs, bad = tunables.alloc_pairs("roundup_power2_divisions:[256:1,>:4],page_size:1g")
    assert pairs == [("roundup_power2_divisions", "[256:1,>:4]"), ("page_size", "1g")] and bad == []
    assert tunables.alloc_pairs("expandable_segments")[1] == ["expandable_segments"]


def test_since_ok_per_release_line():
    since = ("2.6.0.post4", "2.7.1.post1", "2.8.0.post1")
    assert tunables.since_ok("2.7.1.post1", since) is True
    assert tunables.since_ok("2.7.1", since) is False
    assert tunables.since_ok("2.9.0", since) is True
    assert tunables.since_ok("2.6.0.post3", since) is False
    assert tunables.since_ok(None, since) is None
    assert tunables.since_ok("2.5.1", since) is False  # a line that never got the key
    assert tunables.since_ok("2.1.0.post10", since) is False
    assert tunables.since_ok("1.11.0", ("2.1.0",)) is None  # older than the table speaks for


# --------------------------------------------------------------------------- rules
def _judge(
    tmp_path: Path,
    env: dict,
    torch_npu: str = "2.6.0.post5",
    chip_table: Optional[str] = A2_TABLE,
    codes: Tuple[str, ...] = ENV_CODES,
    cann: str = "8.0.0",
):
    """The findings of ``codes`` on a real tree; ``chip_table`` is the replayed `npu-smi
    info` (``None``: an npu-smi that prints nothing, so the chip is unknown)."""
    root = build_root(tmp_path / "root", "node1", torch_npu=torch_npu, cann=cann)
    bindir = tmp_path / "bin"
    write(bindir, "npu-smi-info.txt", fixture(chip_table) if chip_table else "")
    script = write(
        bindir,
        "npu-smi",
        '#!/bin/sh\nif [ "$*" = "info" ]; then cat "$(dirname "$0")/npu-smi-info.txt"; exit 0; fi\nexit 1\n',
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    environ = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": "/root", **env}
    snap = collect(Host(root=str(root), environ=environ), Options())
    return [f for f in evaluate(snap, load_matrix(), Options()) if f.code in codes]


def _one(found, code):
    hits = [f for f in found if f.code == code]
    assert len(hits) == 1, [(f.code, f.title) for f in found]
    return hits[0]


def test_task_queue_text_means_off(tmp_path):
    f = _one(_judge(tmp_path, {"TASK_QUEUE_ENABLE": "true"}), "ENV009")
    assert f.severity == "warning" and f.title.startswith("TASK_QUEUE_ENABLE=true is read as 0")
    assert "task queue off" in f.title
    assert any("TASK_QUEUE_ENABLE.md" in e for e in f.evidence)
    assert f.fix == ["export TASK_QUEUE_ENABLE=1"]


def test_task_queue_out_of_range_is_rejected(tmp_path):
    f = _one(_judge(tmp_path, {"TASK_QUEUE_ENABLE": "3"}), "ENV008")
    assert f.severity == "error" and "not one of 0, 1, 2" in f.title


def test_valid_unusual_settings_stay_quiet(tmp_path):
    env = {
        "TASK_QUEUE_ENABLE": "2",
        "MULTI_STREAM_MEMORY_REUSE": "2",
        "STREAMS_PER_DEVICE": "32",
        "ASCEND_LAUNCH_BLOCKING": "0",
        "ACL_OP_COMPILER_CACHE_MODE": "force",
        "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,segment_size_mb:64",
        "HCCL_BUFFSIZE": "400",
        "P2P_HCCL_BUFFSIZE": "0",
        "INF_NAN_MODE_ENABLE": "1",
        "ASCEND_GLOBAL_LOG_LEVEL": "3",
        "HCCL_SOCKET_IFNAME": "eth0",
    }
    assert _judge(tmp_path, env) == []


def test_inf_nan_zero_on_a2_is_rejected_unless_forced(tmp_path):
    f = _one(_judge(tmp_path / "a", {"INF_NAN_MODE_ENABLE": "0"}), "ENV008")
    assert f.severity == "error" and "910b" in " ".join(f.evidence)
    f = _one(_judge(tmp_path / "b", {"INF_NAN_MODE_ENABLE": "off"}), "ENV008")
    assert "reads as 0" in f.evidence[0]
    forced = _judge(tmp_path / "c", {"INF_NAN_MODE_ENABLE": "0", "INF_NAN_MODE_FORCE_DISABLE": "1"})
    assert [(f.code, f.severity) for f in forced] == [("ENV009", "info")]


def test_alloc_conf_unknown_key_and_conflict(tmp_path):
    f = _one(_judge(tmp_path / "a", {"PYTORCH_NPU_ALLOC_CONF": "expandable_segment:True"}), "ENV008")
    assert "'expandable_segment' is not an allocator option" in f.title
    f = _one(
        _judge(tmp_path / "b", {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:128"}), "ENV008"
    )
    assert "max_split_size_mb cannot be combined with expandable_segments:True" in f.evidence
    f = _one(_judge(tmp_path / "c", {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:true"}), "ENV008")
    assert "expandable_segments:true is not True or False" in f.title


def test_alloc_conf_key_newer_than_installed_torch_npu(tmp_path):
    env = {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,segment_size_mb:64"}
    f = _one(_judge(tmp_path / "old", env, torch_npu="2.6.0.post3"), "ENV008")
    assert "segment_size_mb is unknown to torch_npu 2.6.0.post3" in f.title
    assert _judge(tmp_path / "new", env, torch_npu="2.6.0.post4") == []


def test_alloc_conf_key_without_expandable_has_no_effect(tmp_path):
    f = _one(_judge(tmp_path, {"PYTORCH_NPU_ALLOC_CONF": "segment_size_mb:64"}), "ENV009")
    assert f.severity == "warning" and f.fix == [
        "export PYTORCH_NPU_ALLOC_CONF=segment_size_mb:64,expandable_segments:True"
    ]


def test_cuda_twins(tmp_path):
    found = _judge(tmp_path / "a", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    f = _one(found, "ENV011")
    assert f.severity == "warning" and f.fix[0].startswith("export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True  #")
    found = _judge(tmp_path / "b", {"NCCL_SOCKET_IFNAME": "eth0", "HCCL_SOCKET_IFNAME": "eth0"})
    assert _one(found, "ENV011").severity == "info"


def test_hccl_buffsize_in_bytes(tmp_path):
    # 4194304 MB twice over cannot fit in a 910B3's 65536 MB of HBM: HCCL cannot allocate it
    f = _one(_judge(tmp_path / "a", {"HCCL_BUFFSIZE": "4194304"}), "ENV008")
    assert f.severity == "error" and "cannot fit" in f.title and f.fix == ["export HCCL_BUFFSIZE=4"]
    assert "device memory: 65536 MB per chip (npu-smi HBM-Usage)" in f.evidence
    f = _one(_judge(tmp_path / "b", {"HCCL_BUFFSIZE": "40000"}), "ENV008")
    assert f.fix == ["export HCCL_BUFFSIZE=200"]
    assert _judge(tmp_path / "c", {"HCCL_BUFFSIZE": "2048"}) == []


def test_hccl_connect_timeout_range(tmp_path):
    f = _one(_judge(tmp_path / "a", {"HCCL_CONNECT_TIMEOUT": "9000"}), "ENV009")
    assert f.title == "HCCL_CONNECT_TIMEOUT=9000 is outside the documented range [120, 7200]"
    assert f.fix == ["export HCCL_CONNECT_TIMEOUT=7200"]
    assert _one(_judge(tmp_path / "b", {"HCCL_CONNECT_TIMEOUT": "60"}), "ENV009").fix == [
        "export HCCL_CONNECT_TIMEOUT=120"
    ]
    # a multi-process job: HCCL013 owns the short timeout
    assert _judge(tmp_path / "c", {"HCCL_CONNECT_TIMEOUT": "60", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "8"}) == []
    assert _judge(tmp_path / "d", {"HCCL_CONNECT_TIMEOUT": "1800"}) == []


def test_cann_operator_compile_and_cache_ranges(tmp_path):
    f = _one(_judge(tmp_path / "te", {"TE_PARALLEL_COMPILER": "64"}), "ENV009")
    assert f.severity == "warning" and f.title == "TE_PARALLEL_COMPILER=64 is outside the documented range [1, 32]"
    assert f.fix == ["export TE_PARALLEL_COMPILER=32"]
    assert any("ParallelCompilerProcessesNumCheck" in e and "retrieved 2026-12-06" in e for e in f.evidence)
    assert _one(_judge(tmp_path / "te0", {"TE_PARALLEL_COMPILER": "0"}), "ENV009").fix == [
        "export TE_PARALLEL_COMPILER=1"
    ]
    # outside [0, 100] CANN falls back to 50: the fix is that default, not the nearest bound
    f = _one(_judge(tmp_path / "ratio", {"ASCEND_REMAIN_CACHE_SIZE_RATIO": "150"}), "ENV009")
    assert f.title == (
        "ASCEND_REMAIN_CACHE_SIZE_RATIO=150 is outside the documented range [0, 100]: CANN uses the default 50 instead"
    )
    assert f.fix == ["export ASCEND_REMAIN_CACHE_SIZE_RATIO=50"]
    # 0 does not switch the compile cache off: CANN replaces it by 500 MB
    f = _one(_judge(tmp_path / "size0", {"ASCEND_MAX_OP_CACHE_SIZE": "0"}), "ENV009")
    assert f.title == (
        "ASCEND_MAX_OP_CACHE_SIZE=0 is outside the documented range [-1, 2147483646] except 0: "
        "CANN uses the default 500 instead"
    )
    assert f.fix == ["export ASCEND_MAX_OP_CACHE_SIZE=500"]
    assert _one(_judge(tmp_path / "size-2", {"ASCEND_MAX_OP_CACHE_SIZE": "-2"}), "ENV009").severity == "warning"
    # the aclnn cache is capped at 10000000 entries
    f = _one(_judge(tmp_path / "aclnn", {"ACLNN_CACHE_LIMIT": "20000000"}), "ENV009")
    assert f.title.endswith(": CANN caps it at 10000000") and f.fix == ["export ACLNN_CACHE_LIMIT=10000000"]
    quiet = {
        "TE_PARALLEL_COMPILER": "16",
        "ASCEND_REMAIN_CACHE_SIZE_RATIO": "80",
        "ACLNN_CACHE_LIMIT": "0",
        "ASCEND_MAX_OP_CACHE_SIZE": "-1",
    }
    assert _judge(tmp_path / "ok", quiet) == []
    quiet = {"ASCEND_MAX_OP_CACHE_SIZE": "2048"}
    assert _judge(tmp_path / "ok2", quiet) == []


def test_fault_collection_path_left_set(tmp_path):
    f = _one(_judge(tmp_path / "on", {"NPU_COLLECT_PATH": "/data/npu_collect"}), "ENV010")
    assert f.severity == "info" and f.title.startswith(
        "NPU_COLLECT_PATH=/data/npu_collect is set: CANN writes exception"
    )
    assert f.fix == ["unset NPU_COLLECT_PATH"] and any("envref_07_0163" in e for e in f.evidence)
    assert _judge(tmp_path / "empty", {"NPU_COLLECT_PATH": ""}) == []
    assert (
        _judge(tmp_path / "dump", {"ASCEND_DUMP_PATH": "/data/dump", "ASCEND_DUMP_SCENE": "aic_err_brief_dump"}) == []
    )


def test_range_below_minimum_is_judged_in_a_multi_process_job(tmp_path):
    """Only HCCL_CONNECT_TIMEOUT hands a short value in a multi-process job to HCCL013; any
    other range is judged whatever the job shape."""
    job = {"WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "8"}
    f = _one(_judge(tmp_path / "aclnn", {"ACLNN_CACHE_LIMIT": "-1", **job}), "ENV009")
    assert f.fix == ["export ACLNN_CACHE_LIMIT=10000"]
    assert _one(_judge(tmp_path / "te", {"TE_PARALLEL_COMPILER": "0", **job}), "ENV009").severity == "warning"


def test_debug_switch_left_on(tmp_path):
    found = _judge(tmp_path, {"ASCEND_LAUNCH_BLOCKING": "1", "TASK_QUEUE_ENABLE": "2"})
    f = _one(found, "ENV010")
    assert "TASK_QUEUE_ENABLE=2 is ignored while it is on" in f.evidence
    assert f.fix == ["unset ASCEND_LAUNCH_BLOCKING"]


def test_streams_per_device_reset(tmp_path):
    f = _one(_judge(tmp_path, {"STREAMS_PER_DEVICE": "16"}), "ENV009")
    assert f.severity == "warning" and "resets it to the default 8" in f.title


# --------------------------------------------------------------------------- env --recommend
def _apply(environ: dict, lines: list) -> dict:
    """The environment after running the printed shell lines (export/unset only)."""
    import shlex

    out = dict(environ)
    for line in lines:
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            out[name] = value
        elif words[:1] == ["unset"]:
            out.pop(words[1], None)
    return out


def test_env_recommend_makes_the_recheck_clean(tmp_path):
    from clirun import npudoctor

    root = build_root(tmp_path / "root", "node1", torch_npu="2.6.0.post5")
    bad = {
        "TASK_QUEUE_ENABLE": "true",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "HCCL_BUFFSIZE": "4194304",
        "ASCEND_LAUNCH_BLOCKING": "1",
        "PYTORCH_NPU_ALLOC_CONF": "segment_size_mb:64",
    }
    environ = {"PATH": "/usr/bin:/bin", "HOME": "/root", **bad}
    proc = npudoctor("env", "--recommend", "--root", str(root), env=environ)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [
        "unset ASCEND_LAUNCH_BLOCKING",
        "export HCCL_BUFFSIZE=4",
        "unset PYTORCH_CUDA_ALLOC_CONF",
        "export PYTORCH_NPU_ALLOC_CONF=segment_size_mb:64,expandable_segments:True",
        "export TASK_QUEUE_ENABLE=1",
    ]
    assert "ENV011" in proc.stderr
    fixed = _apply(environ, lines)
    snap = collect(Host(root=str(root), environ=fixed), Options())
    assert [
        f.code for f in evaluate(snap, load_matrix(), Options()) if f.code.startswith("ENV0") and f.code >= "ENV008"
    ] == []
    pod = npudoctor("env", "--recommend", "--format", "pod", "--root", str(root), env=environ)
    assert '  - name: "TASK_QUEUE_ENABLE"' in pod.stdout and '    value: "1"' in pod.stdout
    docker = npudoctor("env", "--recommend", "--format", "dockerfile", "--root", str(root), env=environ)
    assert 'ENV TASK_QUEUE_ENABLE="1"' in docker.stdout.splitlines()
    assert npudoctor("env", "--format", "pod", env=environ).returncode == 2


# --------------------------------------------------------------------------- CPU_AFFINITY_CONF
def _judge_cpus(tmp_path: Path, env: dict, allowed: str, online: str = "0-191"):
    """_judge with a root holding /proc/self/status and /sys/devices/system/cpu/online."""
    root = build_root(tmp_path / "root", "node1", torch_npu="2.6.0.post5")
    write(root, "proc/self/status", f"Name:\tpython3\nCpus_allowed_list:\t{allowed}\n")
    write(root, "sys/devices/system/cpu/online", online + "\n")
    bindir = tmp_path / "bin"
    write(bindir, "npu-smi-info.txt", fixture(A2_TABLE))
    script = write(
        bindir,
        "npu-smi",
        '#!/bin/sh\nif [ "$*" = "info" ]; then cat "$(dirname "$0")/npu-smi-info.txt"; exit 0; fi\nexit 1\n',
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    snap = collect(Host(root=str(root), environ={"PATH": f"{bindir}:/usr/bin:/bin", **env}), Options())
    return [f for f in evaluate(snap, load_matrix(), Options()) if f.code.startswith("ENV0") and f.code >= "ENV008"]


def test_affinity_parser():
    assert tunables.affinity_parts("1,npu0:0-1,npu1:2-5,npu_affine:1") == (1, {0: (0, 1), 1: (2, 5)}, [])
    assert tunables.affinity_parts("3")[2] == ["3"]
    assert tunables.affinity_parts("1,npu0:5-2")[2] == ["npu0:5-2"]
    assert tunables.cpu_set("0-3,8") == [0, 1, 2, 3, 8]


def test_affinity_default_ranges_outside_the_cpuset(tmp_path):
    # a container limited to CPUs 0-47 of 192: torch_npu splits all 192 over 8 NPUs (24 each),
    # NPUs 2..7 get ranges outside the cpuset and nothing is bound
    f = _one(_judge_cpus(tmp_path, {"CPU_AFFINITY_CONF": "1"}, "0-47"), "ENV009")
    assert f.severity == "warning" and "binds nothing" in f.title
    assert any(e.startswith("default ranges (192 online CPUs / 8 NPUs") and "npu2:48-71" in e for e in f.evidence)
    assert f.fix[0].startswith("export CPU_AFFINITY_CONF=1,npu0:0-5,npu1:6-11,")


def test_affinity_valid_settings_stay_quiet(tmp_path):
    assert _judge_cpus(tmp_path / "a", {"CPU_AFFINITY_CONF": "2"}, "0-191") == []
    explicit = ",".join(f"npu{n}:{6 * n}-{6 * n + 5}" for n in range(8))
    assert _judge_cpus(tmp_path / "b", {"CPU_AFFINITY_CONF": "1," + explicit}, "0-47") == []
    assert _judge_cpus(tmp_path / "c", {"CPU_AFFINITY_CONF": "0"}, "0-3") == []


def test_affinity_explicit_range_outside_and_grammar(tmp_path):
    f = _one(_judge_cpus(tmp_path / "a", {"CPU_AFFINITY_CONF": "2,npu0:100-110"}, "0-95", online="0-95"), "ENV009")
    assert "explicit ranges outside it: npu0:100-110" in f.evidence
    assert not any(e.startswith("default ranges") for e in f.evidence)  # 12 CPUs per NPU, all inside
    f = _one(_judge_cpus(tmp_path / "b", {"CPU_AFFINITY_CONF": "yes"}, "0-191"), "ENV009")
    assert "cannot read 'yes'" in f.title


def test_compiler_cache_dir_without_parent(tmp_path):
    root = build_root(tmp_path / "root", "node1")
    (root / "data").mkdir()
    env = {"PATH": "/usr/bin:/bin", "ACL_OP_COMPILER_CACHE_DIR": "/data/cache/ops"}
    snap = collect(Host(root=str(root), environ=env), Options())
    assert snap.facts["tunables"]["dirs"]["ACL_OP_COMPILER_CACHE_DIR"] == {
        "path": "/data/cache/ops",
        "exists": False,
        "parent_exists": False,
    }
    (f,) = [f for f in evaluate(snap, None, Options()) if f.code == "ENV009"]
    assert f.title == "ACL_OP_COMPILER_CACHE_DIR=/data/cache/ops is ignored: its parent directory does not exist"
    assert f.fix == ["mkdir -p -m 750 /data/cache/ops"]
    # the parent exists: torch_npu's one mkdir succeeds
    (root / "data/cache").mkdir()
    snap = collect(Host(root=str(root), environ=env), Options())
    assert [f.code for f in evaluate(snap, None, Options()) if f.code == "ENV009"] == []


def test_event_timeout_must_exceed_exec_timeout(tmp_path):
    f = _one(_judge(tmp_path / "a", {"HCCL_EVENT_TIMEOUT": "600", "HCCL_EXEC_TIMEOUT": "1800"}), "ENV009")
    assert f.title.startswith("HCCL_EVENT_TIMEOUT=600 is not above HCCL_EXEC_TIMEOUT=1800")
    assert f.fix[0].startswith("export HCCL_EVENT_TIMEOUT=1860")
    f = _one(_judge(tmp_path / "b", {"HCCL_EVENT_TIMEOUT": "3600", "HCCL_EXEC_TIMEOUT": "0"}), "ENV009")
    assert f.fix[0].startswith("export HCCL_EVENT_TIMEOUT=0")
    assert _judge(tmp_path / "c", {"HCCL_EVENT_TIMEOUT": "3600", "HCCL_EXEC_TIMEOUT": "1800"}) == []
    assert _judge(tmp_path / "d", {"HCCL_EVENT_TIMEOUT": "0", "HCCL_EXEC_TIMEOUT": "1800"}) == []
    assert _judge(tmp_path / "e", {"HCCL_EVENT_TIMEOUT": "600"}) == []


# --------------------------------------------------------------------------- HCCL ranges per chip and mode
@pytest.mark.parametrize(
    "text, form, expected",
    [
        ("1800", "int", (1800.0, 0)),
        ("0.05", "decimal2", (0.05, 2)),
        ("0.05", "int", None),
        ("1.234", "decimal2", None),
        (".5", "decimal2", None),
        ("5.", "decimal2", None),
        (" 5", "int", None),
        ("-1", "int", None),
        ("1e3", "decimal2", None),
    ],
)
def test_hccl_number_reads_like_hccl(text, form, expected):
    assert tunables.hccl_number(text, form) == expected


def test_exec_timeout_per_chip_and_mode(tmp_path):
    # Atlas A2 in its default HOST mode: whole seconds only
    f = _one(_judge(tmp_path / "a2", {"HCCL_EXEC_TIMEOUT": "0.5"}), "ENV009")
    assert f.severity == "warning" and f.title.startswith("HCCL_EXEC_TIMEOUT=0.5 has decimals")
    assert "HCCL_OP_EXPANSION_MODE unset: the default HOST" in f.evidence[1] and "910b" in f.evidence[1]
    assert "HCCL_EXEC_TIMEOUT.md" in f.evidence[2] and "retrieved 2026-12-06" in f.evidence[2]
    assert "[0, 2147483647] whole seconds" in f.evidence[2]
    assert "(range [0, 2147483647])" in f.title
    # the same value in AIV mode on an A2, and in the A3's default AI_CPU mode: valid with the
    # CANN 9.0.0 reference, which first documents ten-millisecond values
    aiv = {"HCCL_EXEC_TIMEOUT": "0.5", "HCCL_OP_EXPANSION_MODE": "AIV"}
    assert _judge(tmp_path / "aiv", aiv, cann="9.0.0") == []
    assert _judge(tmp_path / "a3", {"HCCL_EXEC_TIMEOUT": "0.05"}, chip_table=A3_TABLE, cann="9.0.0") == []
    # with CANN 8.0.0, whose reference gives whole seconds: a warning, not a claim of refusal
    f = _one(_judge(tmp_path / "a3-old", {"HCCL_EXEC_TIMEOUT": "0.05"}, chip_table=A3_TABLE), "ENV009")
    assert f.severity == "warning"
    assert f.title == (
        "HCCL_EXEC_TIMEOUT=0.05: decimals are documented from CANN 9.0.0 on; CANN 8.0.0's reference gives whole seconds"
    )
    # AIV mode caps the timeout at 1091 s
    f = _one(_judge(tmp_path / "cap", {"HCCL_EXEC_TIMEOUT": "1800", "HCCL_OP_EXPANSION_MODE": "AIV"}), "ENV009")
    assert f.title.startswith("HCCL_EXEC_TIMEOUT=1800 acts as 1091") and f.fix == ["export HCCL_EXEC_TIMEOUT=1091"]
    # a mode the A2 does not support falls back to HOST, where 1800 is fine
    assert _judge(tmp_path / "bad-mode", {"HCCL_EXEC_TIMEOUT": "1800", "HCCL_OP_EXPANSION_MODE": "CCU_MS"}) == []
    assert _judge(tmp_path / "host", {"HCCL_EXEC_TIMEOUT": "7200"}) == []


def test_exec_timeout_on_atlas_inference(tmp_path):
    f = _one(_judge(tmp_path / "big", {"HCCL_EXEC_TIMEOUT": "20000"}, chip_table=DUO_TABLE), "ENV009")
    assert "outside the documented range (0, 17340]" in f.title and f.fix == ["export HCCL_EXEC_TIMEOUT=17340"]
    f = _one(_judge(tmp_path / "small", {"HCCL_EXEC_TIMEOUT": "30"}, chip_table=DUO_TABLE), "ENV009")
    assert f.title.startswith("HCCL_EXEC_TIMEOUT=30 acts as 68")
    assert _judge(tmp_path / "ok", {"HCCL_EXEC_TIMEOUT": "1836"}, chip_table=DUO_TABLE) == []


def test_exec_timeout_with_unknown_chip_is_an_info(tmp_path):
    f = _one(_judge(tmp_path / "big", {"HCCL_EXEC_TIMEOUT": "20000"}, chip_table=None), "ENV012")
    assert f.severity == "info" and "910, 310p: is outside the documented range (0, 17340]" in f.evidence
    assert _judge(tmp_path / "ok", {"HCCL_EXEC_TIMEOUT": "1800"}, chip_table=None) == []


def test_exec_timeout_decimals_are_not_hccl011(tmp_path):
    hccl = ("HCCL011",) + ENV_CODES
    assert _judge(tmp_path / "a3", {"HCCL_EXEC_TIMEOUT": "0.05"}, chip_table=A3_TABLE, codes=hccl, cann="9.0.0") == []
    f = _one(_judge(tmp_path / "bad", {"HCCL_EXEC_TIMEOUT": "1.234"}, codes=hccl), "HCCL011")
    assert f.severity == "error" and "at most 2 decimals" in f.title


def test_rdma_ranges(tmp_path):
    f = _one(_judge(tmp_path / "a2", {"HCCL_RDMA_TIMEOUT": "22"}), "ENV009")
    assert "outside the documented range [5, 20]" in f.title and f.fix == ["export HCCL_RDMA_TIMEOUT=20"]
    assert _judge(tmp_path / "duo", {"HCCL_RDMA_TIMEOUT": "22"}, chip_table=DUO_TABLE) == []
    f = _one(_judge(tmp_path / "sl", {"HCCL_RDMA_SL": "9"}), "ENV008")
    assert f.severity == "error" and "[0, 7]" in f.title
    f = _one(_judge(tmp_path / "tc", {"HCCL_RDMA_TC": "130"}), "ENV009")
    assert "not a multiple of 4" in f.title and f.fix == ["export HCCL_RDMA_TC=128"]
    f = _one(_judge(tmp_path / "cnt", {"HCCL_RDMA_RETRY_CNT": "three"}), "ENV009")
    assert "not a whole number" in f.title
    quiet = {"HCCL_RDMA_TC": "132", "HCCL_RDMA_SL": "4", "HCCL_RDMA_RETRY_CNT": "7", "HCCL_RDMA_TIMEOUT": "18"}
    assert _judge(tmp_path / "ok", quiet) == []


def test_async_error_handling_accepts_the_newer_modes(tmp_path):
    env = {"TORCH_HCCL_ASYNC_ERROR_HANDLING": "2", "HCCL_ASYNC_ERROR_HANDLING": "3", "TORCH_HCCL_DESYNC_DEBUG": "1"}
    assert _judge(tmp_path / "ok", env) == []
    f = _one(_judge(tmp_path / "bad", {"TORCH_HCCL_ASYNC_ERROR_HANDLING": "4"}), "ENV008")
    assert "not one of 0, 1, 2, 3" in f.title
    # 2 and 3 arrived with torch_npu 7.3.0 (2.6.0.post5 on the 2.6.0 line)
    old = _judge(tmp_path / "old", {"HCCL_ASYNC_ERROR_HANDLING": "2"}, torch_npu="2.6.0.post4")
    f = _one(old, "ENV008")
    assert f.title == "HCCL_ASYNC_ERROR_HANDLING=2: torch_npu 2.6.0.post4 accepts only 0, 1 and refuses it at start"
    assert f.fix == ["export HCCL_ASYNC_ERROR_HANDLING=1"]


def test_env_recommend_fixes_the_cann_settings(tmp_path):
    """The printed lines for the CANN compile, cache and fault-collection settings make the
    re-check clean."""
    from clirun import npudoctor

    root = build_root(tmp_path / "root", "node1", torch_npu="2.6.0.post5")
    bad = {
        "TE_PARALLEL_COMPILER": "64",
        "ASCEND_REMAIN_CACHE_SIZE_RATIO": "150",
        "ACLNN_CACHE_LIMIT": "20000000",
        "NPU_COLLECT_PATH": "/data/npu_collect",
    }
    environ = {"PATH": "/usr/bin:/bin", "HOME": "/root", **bad}
    proc = npudoctor("env", "--recommend", "--root", str(root), env=environ)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [
        "export ACLNN_CACHE_LIMIT=10000000",
        "export ASCEND_REMAIN_CACHE_SIZE_RATIO=50",
        "unset NPU_COLLECT_PATH",
        "export TE_PARALLEL_COMPILER=32",
    ]
    snap = collect(Host(root=str(root), environ=_apply(environ, lines)), Options())
    assert [f.code for f in evaluate(snap, load_matrix(), Options()) if f.code in ENV_CODES] == []


def test_env_recommend_fixes_the_hccl_ranges(tmp_path):
    """On an A2 (the replayed capture) in AIV mode: the printed lines bring every HCCL number
    into its range, and the re-check is clean."""
    from clirun import npudoctor

    root = build_root(tmp_path / "root", "node1", torch_npu="2.6.0.post5")
    bindir = tmp_path / "bin"
    write(bindir, "npu-smi-info.txt", fixture(A2_TABLE))
    script = write(
        bindir,
        "npu-smi",
        '#!/bin/sh\nif [ "$*" = "info" ]; then cat "$(dirname "$0")/npu-smi-info.txt"; exit 0; fi\nexit 1\n',
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    bad = {
        "HCCL_OP_EXPANSION_MODE": "AIV",
        "HCCL_EXEC_TIMEOUT": "1800",
        "HCCL_RDMA_SL": "9",
        "HCCL_RDMA_TC": "130",
        "HCCL_RDMA_TIMEOUT": "3",
    }
    environ = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": "/root", **bad}
    proc = npudoctor("env", "--recommend", "--root", str(root), env=environ)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [
        "export HCCL_EXEC_TIMEOUT=1091",
        "export HCCL_RDMA_SL=7",
        "export HCCL_RDMA_TC=128",
        "export HCCL_RDMA_TIMEOUT=5",
    ]
    snap = collect(Host(root=str(root), environ=_apply(environ, lines)), Options())
    assert [f.code for f in evaluate(snap, load_matrix(), Options()) if f.code in ENV_CODES + ("HCCL011",)] == []
