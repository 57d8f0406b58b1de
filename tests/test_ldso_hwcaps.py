"""ld.so's search over real files (issue 14): this machine's own /etc/ld.so.cache (glibc's new
format "glibc-ld.so.cache1.1") against `ldconfig -p`, and glibc-hwcaps subdirectories in
search directories and in a cache ldconfig writes for a root."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from npudoctor.host import Host
from npudoctor.parsers.ldcache import NEW_MAGIC, parse_ld_cache
from npudoctor.probes._ldso import Resolver, hwcaps_subdirs

LDCONFIG = shutil.which("ldconfig") or ("/sbin/ldconfig" if Path("/sbin/ldconfig").exists() else None)
LIBZ = next(
    (p for p in (Path("/lib/x86_64-linux-gnu/libz.so.1"), Path("/usr/lib64/libz.so.1")) if p.exists()),
    None,
)
#: The flags lines of real x86-64 CPUs (an AVX-512 server, an AVX2 desktop, a Core 2).
V4 = (
    "flags : fpu cx8 cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave "
    "avx512f avx512bw avx512cd avx512dq avx512vl"
)
V3 = "flags : fpu cx8 cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
BASELINE = "flags : fpu cx8 sse sse2 ssse3 lahf_lm"


def _ldconfig_p(cache: Path):
    out = subprocess.run([LDCONFIG, "-p", "-C", str(cache)], capture_output=True, text=True, timeout=30).stdout
    return [(line.split()[0], line.split("=> ")[1]) for line in out.splitlines()[1:] if "=>" in line]


@pytest.mark.skipif(LDCONFIG is None or not Path("/etc/ld.so.cache").exists(), reason="no ld.so.cache here")
def test_this_machines_ld_so_cache_reads_as_ldconfig_lists_it():
    data = Path("/etc/ld.so.cache").read_bytes()
    parsed = parse_ld_cache(data)
    assert parsed.error is None
    if data.startswith(NEW_MAGIC):
        assert parsed.format == "new"
    assert [(e.soname, e.path) for e in parsed.entries] == _ldconfig_p(Path("/etc/ld.so.cache"))
    assert len(parsed.entries) > 50


@pytest.mark.parametrize(
    ("text", "arch", "want"),
    [
        (V4, "x86_64", ["x86-64-v4", "x86-64-v3", "x86-64-v2"]),
        (V3, "x86_64", ["x86-64-v3", "x86-64-v2"]),
        (BASELINE, "x86_64", []),
        (V3.replace(" popcnt", ""), "x86_64", []),  # v3 without v2 is no level at all
        ("Features : fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics", "aarch64", []),
        (None, "x86_64", []),
    ],
)
def test_hwcaps_levels_from_cpu_flags(text, arch, want):
    assert hwcaps_subdirs(text, arch) == want


def test_this_machines_cpu_levels_are_consistent():
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else None
    levels = hwcaps_subdirs(text, "x86_64")
    assert levels == [lv for lv in ("x86-64-v4", "x86-64-v3", "x86-64-v2") if lv in levels]


@pytest.mark.skipif(LIBZ is None, reason="no libz.so.1 here")
def test_a_hwcaps_copy_in_a_search_directory_wins_on_a_cpu_of_that_level(tmp_path):
    lib = tmp_path / "opt" / "lib"
    (lib / "glibc-hwcaps" / "x86-64-v3").mkdir(parents=True)
    shutil.copy(LIBZ, lib / "libz.so.1")
    shutil.copy(LIBZ, lib / "glibc-hwcaps" / "x86-64-v3" / "libz.so.1")
    host = Host(root=str(tmp_path))
    v3 = Resolver(host, "x86_64", 64, ["/opt/lib"], hwcaps=["x86-64-v3", "x86-64-v2"])
    assert v3.search("libz.so.1", [], []) == ("/opt/lib/glibc-hwcaps/x86-64-v3/libz.so.1", "LD_LIBRARY_PATH")
    v2 = Resolver(host, "x86_64", 64, ["/opt/lib"], hwcaps=["x86-64-v2"])
    assert v2.search("libz.so.1", [], []) == ("/opt/lib/libz.so.1", "LD_LIBRARY_PATH")
    # under a root without /proc/cpuinfo no level is known: the plain directory
    assert Resolver(host, "x86_64", 64, ["/opt/lib"]).hwcaps == []


@pytest.mark.skipif(LDCONFIG is None or LIBZ is None, reason="ldconfig or libz.so.1 not available")
def test_hwcaps_entries_of_a_real_cache_count_only_on_that_level(tmp_path):
    root = tmp_path / "root"
    lib = root / "opt" / "npu" / "lib"
    (lib / "glibc-hwcaps" / "x86-64-v3").mkdir(parents=True)
    shutil.copy(LIBZ, lib / "libz.so.1")
    shutil.copy(LIBZ, lib / "glibc-hwcaps" / "x86-64-v3" / "libz.so.1")
    (root / "etc").mkdir()
    (root / "etc" / "ld.so.conf").write_text("/opt/npu/lib\n")
    proc = subprocess.run(
        [LDCONFIG, "-X", "-r", str(root), "-C", "/etc/ld.so.cache", "-f", "/etc/ld.so.conf"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    cache = root / "etc" / "ld.so.cache"
    if not cache.exists():
        pytest.skip(f"ldconfig -r did not write a cache: {proc.stderr[-300:]}")
    parsed = parse_ld_cache(cache.read_bytes())
    assert parsed.error is None
    paths = parsed.lookup("libz.so.1", "x86_64")
    if "/opt/npu/lib/glibc-hwcaps/x86-64-v3/libz.so.1" not in paths:
        pytest.skip("this ldconfig does not index glibc-hwcaps subdirectories (glibc < 2.33)")
    assert "/opt/npu/lib/libz.so.1" in paths
    host = Host(root=str(root))
    v3 = Resolver(host, "x86_64", 64, [], hwcaps=["x86-64-v3", "x86-64-v2"])
    assert v3.search("libz.so.1", [], []) == ("/opt/npu/lib/glibc-hwcaps/x86-64-v3/libz.so.1", "ld.so.cache")
    plain = Resolver(host, "x86_64", 64, [], hwcaps=[])
    assert plain.search("libz.so.1", [], []) == ("/opt/npu/lib/libz.so.1", "ld.so.cache")
