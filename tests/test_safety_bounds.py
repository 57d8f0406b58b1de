"""Bounds on what hostile input can make npudoctor build: memory and work stay
small and the excess is said, never a crash -- measured in bytes and counts, not time."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Dict, List

import pytest
from clirun import npudoctor

from npudoctor.host import Host
from npudoctor.knowledge.versions import malformed_version
from npudoctor.parsers.ldcache import LD_CONF_MAX_FILES, LD_CONF_MAX_LINES, parse_ld_conf
from npudoctor.parsers.set_env import MAX_VALUE, evaluate
from npudoctor.snapshot import SNAPSHOT_DEPTH, SNAPSHOT_LIMIT, SNAPSHOT_VALUES, Snapshot, SnapshotError


def test_a_doubling_set_env_stays_small_and_is_reported() -> None:
    text = "A=x\n" + "A=$A$A\n" * 40 + "export LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:$A\n"
    tracemalloc.start()
    try:
        result = evaluate(text, "/usr/local/Ascend/ascend-toolkit/set_env.sh")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20
    assert len(result.variables["A"]) <= MAX_VALUE
    reasons = [reason for _line, reason in result.unsupported]
    assert any("over 256 KiB" in r for r in reasons)
    assert any("expansions past 8 MiB" in r for r in reasons)


def _fs(files: Dict[str, str]):  # type: ignore[no-untyped-def]
    reads: List[str] = []

    def read(path: str) -> str:
        reads.append(path)
        return files.get(path)  # type: ignore[return-value]

    def listdir(directory: str) -> List[str]:
        return [k.rsplit("/", 1)[1] for k in files if k.rsplit("/", 1)[0] == directory]

    return read, listdir, reads


def test_ld_so_conf_includes_that_fan_out_read_each_file_once() -> None:
    files = {"/etc/ld.so.conf": "include /etc/ld.so.conf.d/*\n"}
    for i in range(10):
        files[f"/etc/ld.so.conf.d/{i}.conf"] = f"include /etc/ld.so.conf.d/*\n/usr/lib/d{i}\n"
    read, listdir, reads = _fs(files)
    conf = parse_ld_conf("/etc/ld.so.conf", read, listdir)
    assert len(reads) == 11 and sorted(reads) == sorted(files)
    assert sorted(conf.dirs) == sorted(f"/usr/lib/d{i}" for i in range(10))


def test_ld_so_conf_files_and_lines_are_bounded() -> None:
    files = {"/etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n"}
    for i in range(LD_CONF_MAX_FILES + 50):
        files[f"/etc/ld.so.conf.d/{i:04d}.conf"] = "/usr/lib/x\n"
    read, listdir, reads = _fs(files)
    conf = parse_ld_conf("/etc/ld.so.conf", read, listdir)
    assert len(reads) == LD_CONF_MAX_FILES
    assert any(f"more than {LD_CONF_MAX_FILES} files" in e for e in conf.errors)
    big = {"/etc/ld.so.conf": "\n".join(f"/d{i}" for i in range(200000))}
    read, listdir, reads = _fs(big)
    conf = parse_ld_conf("/etc/ld.so.conf", read, listdir)
    assert len(conf.dirs) == LD_CONF_MAX_LINES
    assert any("lines in all" in e for e in conf.errors)


def test_an_absurd_version_is_malformed_not_a_crash(tmp_path: Path) -> None:
    site = tmp_path / "root/usr/local/lib/python3.10/site-packages"
    absurd = "2.1.0.post" + "9" * 5000
    for name in ("torch", "torch_npu"):
        dist = site / f"{name}-2.1.0.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {absurd}\n")
    result = npudoctor("check", "--root", str(tmp_path / "root"), "--json", env={"PATH": "/usr/bin:/bin"})
    doc = json.loads(result.stdout)
    assert [f["title"] for f in doc["findings"] if f["code"] == "HOST099"] == []
    record = doc["facts"]["packages"]["installed"]["torch-npu"][0]
    assert record["version"] is None
    assert "is malformed (5010 characters long" in record["metadata_error"]
    assert malformed_version("2.1.0.post" + "1" * 40) == "a number of more than 32 digits"
    assert malformed_version("2.1.0.post10+git1234abcd") is None


def test_a_1500_deep_directory_is_walked_without_recursion(tmp_path: Path) -> None:
    top = tmp_path / "root/usr/lib"
    top.mkdir(parents=True)
    cwd = os.getcwd()
    try:
        os.chdir(top)
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
        (Path(".") / "libdeep.so").write_text("")
    finally:
        os.chdir(cwd)
    host = Host(str(tmp_path / "root"), {})
    walked = list(host.walk("/usr/lib"))
    assert len(walked) >= 1000  # as deep as the path length limit lets the kernel list it
    assert walked[0] == ("/usr/lib", ["d"], [])
    pruned = []
    for dirpath, dirnames, _files in host.walk("/usr/lib"):
        pruned.append(dirpath)
        dirnames[:] = []
    assert pruned == ["/usr/lib"]
    _remove_deep(top)


def _remove_deep(top: Path) -> None:
    """Remove the chain of ``d`` directories under ``top`` bottom-up without recursion
    (shutil.rmtree, and so pytest's clean-up of old temporary directories, recurses)."""
    cwd = os.getcwd()
    try:
        os.chdir(top)
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for name in os.listdir("."):
            os.unlink(name)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(cwd)


def test_an_oversized_snapshot_is_refused_from_its_size_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(SNAPSHOT_LIMIT + (1 << 20))  # sparse: nothing on disk
    tracemalloc.start()
    try:
        with pytest.raises(SnapshotError, match="is over 64 MB"):
            Snapshot.load(str(big))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    result = npudoctor("check", "--from", str(big), env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and "over 64 MB" in result.stderr
    compared = npudoctor("compare", str(big), str(big), env={"PATH": "/usr/bin:/bin"})
    assert "over 64 MB" in compared.stdout + compared.stderr


def test_a_snapshot_of_tiny_objects_is_refused_by_count_not_parsed(tmp_path: Path) -> None:
    many = tmp_path / "many.json"
    many.write_text('{"schema_version": 1, "facts": {"x": [' + ",".join(["{}"] * (SNAPSHOT_VALUES // 2 + 10)) + "]}}")
    tracemalloc.start()
    try:
        with pytest.raises(SnapshotError, match="more than 2000000 values"):
            Snapshot.load(str(many))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # the text itself (~4 MB, as str) and no parsed objects
    compared = npudoctor("compare", str(many), str(many), env={"PATH": "/usr/bin:/bin"})
    assert "more than 2000000 values" in compared.stdout + compared.stderr


def test_a_deeply_nested_snapshot_is_refused_before_parsing(tmp_path: Path) -> None:
    # 500 levels parse with json (under the recursion limit) but would meet every walk of
    # the facts later; the bound is on nesting, not on bytes or values
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema_version": 1, "facts": {"x": ' + "[" * 500 + "]" * 500 + "}}")
    with pytest.raises(SnapshotError, match=f"nested 502 levels deep \\(more than {SNAPSHOT_DEPTH}\\)"):
        Snapshot.load(str(deep))
    compared = npudoctor("compare", str(deep), str(deep), env={"PATH": "/usr/bin:/bin"})
    assert "nested 502 levels deep" in compared.stdout + compared.stderr
    assert "Traceback" not in compared.stdout + compared.stderr


def test_brackets_inside_strings_are_not_nesting() -> None:
    from npudoctor.parsers.jsontext import depth, loads

    text = '{"a": "[[[[{{{{ \\" ]]]", "b": [[1]]}'
    assert depth(text) == 3
    assert loads(text, max_depth=3) == {"a": '[[[[{{{{ " ]]]', "b": [[1]]}
    assert depth("7") == 0


def _bundle(tmp_path: Path, files: List[Dict[str, object]]) -> Path:
    bundle = tmp_path / "bundle"
    (bundle / "wheels").mkdir(parents=True)
    (bundle / "manifest.json").write_text(json.dumps({"files": files}))
    return bundle


def test_plan_verify_checks_size_before_hashing_and_refuses_nul_paths(tmp_path: Path) -> None:
    digest = "0" * 64
    wheel = "wheels/torch-2.1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    bundle = _bundle(
        tmp_path,
        [{"path": wheel, "sha256": digest, "size": 10}, {"path": "wheels/a\u0000b.whl", "sha256": digest, "size": 1}],
    )
    with open(bundle / wheel, "wb") as fh:
        fh.truncate(1 << 30)  # sparse: its size already says it changed
    (bundle / "wheels/stray-1.0-py3-none-any.whl").write_bytes(b"PK")
    result = npudoctor("plan", "verify", str(bundle), "--json", env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 1, result.stderr
    found = {(p["kind"], p["path"]): p for p in json.loads(result.stdout)["problems"]}
    assert found[("size", wheel)]["message"] == f"{wheel} has {1 << 30} bytes, the manifest says 10"
    assert ("changed", wheel) not in found  # not hashed
    assert found[("manifest", "wheels/a\\0b.whl")]["message"] == "a path with a NUL byte; not read"
    assert found[("unlisted", "wheels/stray-1.0-py3-none-any.whl")]["severity"] == "error"


def test_matrix_merge_is_linear_in_rows_and_survives_an_absurd_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from npudoctor.knowledge import refresh_merge
    from npudoctor.knowledge.refresh import merge
    from npudoctor.parsers.official import MappingRow, MarkdownResult, PypiRelease

    calls: List[str] = []
    real = refresh_merge.line_range

    def counted(rows, ext, tags):  # type: ignore[no-untyped-def]
        calls.append(ext)
        return real(rows, ext, tags)

    monkeypatch.setattr(refresh_merge, "line_range", counted)
    n = 3000
    table = MarkdownResult(
        rows=[
            MappingRow(f"2.1.0.post{i}", "2.1.0", "8.0.0", "v2.1.0-7.3.0", "historical", ext_version="7.3.0")
            for i in range(n)
        ],
        layout="compatibility",
    )
    absurd = "2.1.0.post" + "9" * 5000
    pypi = {absurd: PypiRelease(absurd, {"x86_64": ["3.10"]}, {})}
    data, changes = merge({"torch_npu": []}, [("md", "markdown", table), ("pypi", "pypi", pypi)], "2026-12-06")
    assert len(data["torch_npu"]) == n + 1
    assert len(calls) <= 2  # once per extension line, not once per row
    assert sum(1 for c in changes if c.startswith("added torch_npu")) == n + 1
