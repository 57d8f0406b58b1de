"""ld.so.cache (old, new, compat) against `ldconfig -p`, and ld.so.conf includes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from npudoctor.host import Host
from npudoctor.parsers.ldcache import parse_ld_cache, parse_ld_conf

LDCONFIG = shutil.which("ldconfig") or ("/sbin/ldconfig" if Path("/sbin/ldconfig").exists() else None)


def _ldconfig_p(cache: Path):
    out = subprocess.run([LDCONFIG, "-p", "-C", str(cache)], capture_output=True, text=True, timeout=30).stdout
    return [(line.split()[0], line.split("=> ")[1]) for line in out.splitlines()[1:] if "=>" in line]


@pytest.mark.skipif(LDCONFIG is None, reason="ldconfig not available")
@pytest.mark.parametrize("fmt", ["old", "new", "compat"])
def test_cache_formats_match_ldconfig(tmp_path, fmt):
    lib = tmp_path / "ascend" / "lib64"
    lib.mkdir(parents=True)
    src = next(
        p
        for p in (
            Path("/lib/x86_64-linux-gnu/libz.so.1"),
            Path("/lib/aarch64-linux-gnu/libz.so.1"),
            Path("/usr/lib64/libz.so.1"),
        )
        if p.exists()
    )
    shutil.copy(src, lib / "libz.so.1")
    conf = tmp_path / "ld.so.conf"
    conf.write_text(f"{lib}\n")
    cache = tmp_path / f"cache.{fmt}"
    subprocess.run([LDCONFIG, "-X", "-c", fmt, "-C", str(cache), "-f", str(conf)], capture_output=True, timeout=60)
    parsed = parse_ld_cache(cache.read_bytes())
    assert parsed.error is None
    assert parsed.format == fmt
    assert [(e.soname, e.path) for e in parsed.entries] == _ldconfig_p(cache)
    assert parsed.lookup("libz.so.1")[0] == str(lib / "libz.so.1")
    # truncations give an error value, never an exception
    data = cache.read_bytes()
    for cut in (5, 16, 40, len(data) // 3):
        assert parse_ld_cache(data[:cut]).error


def test_garbage():
    assert parse_ld_cache(b"").error == "empty file"
    assert parse_ld_cache(b"\x00" * 100).error.startswith("not an ld.so.cache")
    assert parse_ld_cache(b"glibc-ld.so.cache1.1" + b"\xff" * 60).error


def test_ld_so_conf_includes(tmp_path):
    etc = tmp_path / "etc"
    (etc / "ld.so.conf.d").mkdir(parents=True)
    (etc / "ld.so.conf").write_text("# comment\ninclude /etc/ld.so.conf.d/*.conf\n/usr/local/lib\nhwcap 0 nosegneg\n")
    (etc / "ld.so.conf.d/ascend.conf").write_text(
        "/usr/local/Ascend/driver/lib64/driver/\n/usr/local/Ascend/driver/lib64/common  # comment\n"
    )
    (etc / "ld.so.conf.d/x86_64-linux-gnu.conf").write_text("/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu=libc6\n")
    (etc / "ld.so.conf.d/README").write_text("/not/a/conf\n")
    host = Host(root=str(tmp_path), environ={})
    conf = parse_ld_conf("/etc/ld.so.conf", lambda p: host.read_text(p).text, host.listdir)
    assert conf.dirs == [
        "/usr/local/Ascend/driver/lib64/driver",
        "/usr/local/Ascend/driver/lib64/common",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/local/lib",
    ]
    assert conf.files[0] == "/etc/ld.so.conf" and len(conf.files) == 3


def test_ld_so_conf_self_include_is_bounded(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/ld.so.conf").write_text("include /etc/ld.so.conf\n/lib\n")
    host = Host(root=str(tmp_path), environ={})
    conf = parse_ld_conf("/etc/ld.so.conf", lambda p: host.read_text(p).text, host.listdir)
    assert conf.dirs == ["/lib"]
    assert conf.files == ["/etc/ld.so.conf"]  # read once: an include of a file read is skipped
