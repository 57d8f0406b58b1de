"""The caches that keep `check` fast on a full torch_npu install (issue 18): a package
directory's walk and a RECORD's facts are reused while the files they come from are
unchanged, and give exactly the answer of a fresh read when they are not."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from npudoctor.host import Host
from npudoctor.probes import _extensions, frameworks
from npudoctor.probes._elfcache import ElfCache

SITE = "usr/lib/python3.11/site-packages"
LIBM = "/lib/x86_64-linux-gnu/libm.so.6"


def _so(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(LIBM, path)


def _walk(root: Path, cache) -> list:
    host = Host(root=str(root), environ={})
    facts = {"python": {"site_packages": ["/" + SITE]}}
    errors: list = []
    found = _extensions._walk(host, facts, host.real, lambda: False, errors, big=True, cache=cache)
    assert errors == []
    return found


def test_a_package_walk_is_reused_until_a_directory_changes(tmp_path):
    root = tmp_path / "root"
    torch = root / SITE / "torch"
    _so(torch / "lib" / "libc10.so")
    _so(torch / "_C.cpython-311-x86_64-linux-gnu.so")
    _so(torch / "tests" / "libskipped.so")
    _so(root / SITE / "numpy" / "_core" / "_multiarray_umath.cpython-311-x86_64-linux-gnu.so")
    cache_file = str(tmp_path / "cache" / "elf-v1.json")

    first = ElfCache(cache_file)
    fresh = _walk(root, None)
    assert _walk(root, first) == fresh
    assert ("/" + SITE + "/torch/lib/libc10.so", "torch") in fresh
    assert not any("libskipped" in p for p, _t in fresh)
    assert first.misses == 2 and first.hits == 0  # numpy and torch walked
    first.save()

    second = ElfCache(cache_file)
    assert _walk(root, second) == fresh
    assert (second.hits, second.misses) == (2, 0)

    # a new directory holding a library: torch/lib changes; then only torch/lib/sub changes
    _so(torch / "lib" / "sub" / "libnew.so")
    third = ElfCache(cache_file)
    changed = _walk(root, third)
    assert changed == _walk(root, None) and changed != fresh
    assert ("/" + SITE + "/torch/lib/sub/libnew.so", "torch") in changed
    third.save()

    os.remove(torch / "lib" / "sub" / "libnew.so")
    fourth = ElfCache(cache_file)
    assert _walk(root, fourth) == fresh


def test_a_package_walk_is_checked_once_per_run(tmp_path):
    """The extension scan and the library search walk the same packages: within one run
    (one ElfCache) a walk already checked is answered without checking its directories
    again -- one consistent picture per run -- and the next run sees what changed since."""
    root = tmp_path / "root"
    torch = root / SITE / "torch"
    _so(torch / "lib" / "libc10.so")
    cache_file = str(tmp_path / "cache" / "elf-v1.json")
    first = ElfCache(cache_file)
    before = _walk(root, first)
    assert before == [("/" + SITE + "/torch/lib/libc10.so", "torch")]
    first.save()

    run = ElfCache(cache_file)
    assert _walk(root, run) == before and (run.hits, run.misses) == (1, 0)
    _so(torch / "lib" / "sub" / "libnew.so")  # changed after this run checked the walk
    assert _walk(root, run) == before and (run.hits, run.misses) == (2, 0)
    run.save()

    later = ElfCache(cache_file)
    assert _walk(root, later) == before + [("/" + SITE + "/torch/lib/sub/libnew.so", "torch")]
    assert (later.hits, later.misses) == (0, 1)


def _record(root: Path, lines: list) -> dict:
    dist = root / SITE / "torch-2.6.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "RECORD").write_text("".join(f"{p},sha256=x,1\n" for p in lines), encoding="utf-8")
    return {"kind": "dist-info", "dist_info": "/" + SITE + "/torch-2.6.0.dist-info", "location": "/" + SITE}


def test_record_facts_are_reused_until_the_record_changes(tmp_path):
    root = tmp_path / "root"
    rec = _record(root, ["torch/__init__.py", "torch/lib/libc10.so", "torch/_C.so", "../../bin/x.so"])
    host = Host(root=str(root), environ={})
    cache_file = str(tmp_path / "cache" / "elf-v1.json")
    first = ElfCache(cache_file)
    facts = frameworks._record_facts(host, rec, first)
    assert facts == {"files": [], "so": ["torch/lib/libc10.so", "torch/_C.so"]}
    first.save()
    second = ElfCache(cache_file)
    assert frameworks._record_facts(host, rec, second) == facts and second.hits == 1

    record = root / SITE / "torch-2.6.0.dist-info" / "RECORD"
    st = record.stat()
    _record(root, ["torch/lib/libtorch_cuda.so", "torch/lib/libc10.so"])
    os.utime(record, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    third = ElfCache(cache_file)
    assert frameworks._record_facts(host, rec, third) == {
        "files": ["torch/lib/libtorch_cuda.so"],
        "so": ["torch/lib/libtorch_cuda.so", "torch/lib/libc10.so"],
    }
    assert third.misses == 1


def test_the_cache_keeps_this_runs_entries_and_a_bounded_tail_of_older_ones(tmp_path, monkeypatch):
    from npudoctor.probes import _elfcache

    lib = tmp_path / "libm.so.6"
    shutil.copyfile(LIBM, lib)
    cache_file = str(tmp_path / "cache" / "elf-v1.json")
    monkeypatch.setattr(_elfcache, "KEEP_OLD_BYTES", 3000)
    first = ElfCache(cache_file)
    for i in range(40):  # earlier runs' entries, ~200 bytes each, most recent first
        first.store(f"walk:/old/{i:02d}", {"dirs": [["", [i, i]]], "so": ["x" * 150], "count": 1})
    first.save()
    second = ElfCache(cache_file)
    second.read(str(lib))  # this run reads one file
    second.save()
    kept = _elfcache._load(cache_file)
    assert any(key.startswith(str(lib)) for key in kept)  # this run's entry
    old = [key for key in kept if key.startswith("walk:/old/")]
    assert 0 < len(old) < 40 and old == [f"walk:/old/{i:02d}" for i in range(len(old))]


def _image_copy(tree: Path, scratch: Path) -> None:
    """Copy ``tree`` out and back the way an image layer carries it: same paths, sizes and
    modes, new inodes, mtimes cut to whole seconds (the layers' tar keeps no fraction)."""
    shutil.copytree(tree, scratch, symlinks=True)
    shutil.rmtree(tree)
    shutil.copytree(scratch, tree, symlinks=True)
    for dirpath, _dirnames, filenames in os.walk(tree, topdown=False):
        for name in filenames + [""]:
            path = os.path.join(dirpath, name) if name else dirpath
            st = os.stat(path)
            whole = st.st_mtime_ns // 1_000_000_000 * 1_000_000_000
            os.utime(path, ns=(st.st_atime_ns, whole))


def test_a_cache_filled_before_an_image_copy_answers_after_it(tmp_path):
    """The cache baked into an image by a check at build time (NPUDOCTOR_CACHE_DIR) is
    used whole by a container of the image: nothing of it depends on inodes or on the
    fraction of a second the image's layers drop."""
    root = tmp_path / "root"
    torch = root / SITE / "torch"
    _so(torch / "lib" / "libc10.so")
    _so(root / SITE / "numpy" / "_core" / "_multiarray_umath.cpython-311-x86_64-linux-gnu.so")
    rec = _record(root, ["torch/lib/libc10.so"])
    lib = str(torch / "lib" / "libc10.so")
    for path in (torch / "lib", lib):  # a fraction of a second the copy will drop
        os.utime(path, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    host = Host(root=str(root), environ={})
    cache_file = str(tmp_path / "baked" / "elf-v1.json")

    build = ElfCache(cache_file)
    fresh = _walk(root, build)
    facts = frameworks._record_facts(host, rec, build)
    soname = build.read(lib).soname
    assert build.misses == 4 and soname
    build.save()

    inode = os.stat(torch / "lib").st_ino
    _image_copy(root, tmp_path / "layer")
    assert os.stat(torch / "lib").st_ino != inode
    assert os.stat(lib).st_mtime_ns == 1_700_000_000_000_000_000

    run = ElfCache(cache_file)
    assert _walk(root, run) == fresh
    assert frameworks._record_facts(host, rec, run) == facts
    assert run.read(lib).soname == soname
    assert (run.hits, run.misses) == (4, 0)

    # a change the copy did not make is still seen: a new library in torch/lib
    _so(torch / "lib" / "libnew.so")
    changed = ElfCache(cache_file)
    assert ("/" + SITE + "/torch/lib/libnew.so", "torch") in _walk(root, changed)
    assert changed.misses == 1


def test_an_mtime_holds_exactly_or_cut_to_whole_seconds():
    from npudoctor.probes._elfcache import same_mtime

    second = 1_000_000_000
    assert same_mtime(5 * second + 7, 5 * second + 7)
    assert same_mtime(5 * second + 7, 5 * second)  # kept before an image copy, seen after it
    assert same_mtime(5 * second, 5 * second + 7)
    assert not same_mtime(5 * second + 7, 5 * second + 8)  # both exact and different
    assert not same_mtime(5 * second + 7, 6 * second)
    assert not same_mtime(None, 5 * second) and not same_mtime(True, 1)
