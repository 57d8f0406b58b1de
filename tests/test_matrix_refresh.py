"""``npudoctor matrix refresh`` over real HTTP: the recorded official documents are served
from a loopback server (127.0.0.1 only) and the CLI refreshes from it.  Failure cases (HTML
error page, corrupt download, renamed column, timeout, half-written cache, unwritable cache
directory) must leave a valid matrix in use and say what happened.  The user's real cache is
never touched: NPUDOCTOR_CACHE_DIR points into tmp_path."""

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from clirun import npudoctor

from npudoctor.knowledge.matrix import bundled_dir, load_from, load_matrix
from npudoctor.knowledge.refresh import fetch, refresh
from npudoctor.parsers.official import parse_markdown

OFFICIAL = Path(__file__).resolve().parent / "fixtures" / "official"
COMPAT = "pytorch-master-COMPATIBILITY.md"
PYPI = "pypi-torch-npu.json"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, code, body, ctype="text/plain; charset=utf-8"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        path = self.path.lstrip("/")
        if path == "html":
            return self._send(
                200, b"<!DOCTYPE html><html><head><title>Oops</title></head><body>502</body></html>", "text/html"
            )
        if path == "missing":
            return self._send(404, b"Not Found")
        if path == "corrupt":
            return self._send(200, b"\x1f\x8b\x08\x00\xff\xfe garbage \x00\x9c" * 50, "application/octet-stream")
        if path == "truncated.json":
            return self._send(200, (OFFICIAL / PYPI).read_bytes()[:5000], "application/json")
        if path == "renamed.md":
            text = re.sub(r"\|\s*CANN版本\s*\|", "| 工具包版本 |", (OFFICIAL / COMPAT).read_text(encoding="utf-8"))
            return self._send(200, text.encode("utf-8"))
        if path == "slow":
            time.sleep(3)
            return self._send(200, b"too late")
        f = OFFICIAL / path
        if f.is_file():
            return self._send(200, f.read_bytes())
        return self._send(404, b"Not Found")


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(d))
    return d


def cli(*args, cache_dir):
    """``npudoctor ARGS…`` in-process, its cache in ``cache_dir``."""
    return npudoctor(*args, env=dict(os.environ, NPUDOCTOR_CACHE_DIR=str(cache_dir)))


def test_refresh_reproduces_the_compatibility_document(server, cache):
    url = f"{server}/{COMPAT}"
    res = cli("matrix", "refresh", "--source", url, cache_dir=cache)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok      " + url in res.stdout and "62 mapping rows (26 active, 36 historical)" in res.stdout
    assert (cache / "matrix.json").is_file()
    shown = cli("matrix", "show", "--json", cache_dir=cache)
    assert shown.returncode == 0
    doc = json.loads(shown.stdout)
    assert doc["matrix"]["origin"] == "cache" and doc["matrix"]["refreshed_from"] == [url]
    # the table's CANN comes first; CANN the matrix knows from other official sources stays
    # after it (2.4.0.post2: 8.0.0.beta1, 8.0.RC3.20 from the 6.0.0 release notes)
    from_doc = {
        (r["torch_npu"], r["torch"], r["cann"][0], r["branch"], r["status"]) for r in doc["rows"] if r["source"] == url
    }
    kept = {r["torch_npu"]: r["cann"] for r in doc["rows"]}
    assert kept["2.4.0.post2"] == ["8.0.0", "8.0.0.beta1", "8.0.RC3.20"]
    expected = {
        (r.torch_npu, r.torch, r.cann, r.branch, r.section)
        for r in parse_markdown((OFFICIAL / COMPAT).read_text(encoding="utf-8")).rows
    }
    assert len(expected) == 62
    assert from_doc == expected
    # the done-criterion query on the refreshed matrix
    show = cli("matrix", "show", "--cann", "8.0.0", cache_dir=cache)
    assert [line.split()[0] for line in show.stdout.splitlines()[1:] if line.strip()] == [
        "2.4.0.post2",
        "2.3.1.post4",
        "2.1.0.post10",
    ]
    # check -v prints the provenance of the matrix in use
    check = cli("check", "-v", "--json", cache_dir=cache)
    report = json.loads(check.stdout)
    assert report["matrix"]["origin"] == "cache" and report["matrix"]["retrieved"]


def test_refresh_with_pypi_and_readme_keeps_rows_and_previous_copy(server, cache):
    r1 = refresh([f"{server}/{COMPAT}"])
    assert r1.written and not r1.error
    first = (cache / "matrix.json").read_bytes()
    r2 = refresh(
        [f"{server}/{PYPI}", f"{server}/pytorch-v2.6.0-README.md", f"{server}/pytorch-v2.1.0-6.0.rc1-README.md"]
    )
    assert not r2.error and [s.ok for s in r2.sources] == [True, True, True]
    assert (cache / "matrix.json.prev").read_bytes() == first
    m = load_matrix()
    assert m.provenance["origin"] == "cache"
    assert m.find_torch_npu("2.10.0.post6").python == {"aarch64": ["3.10", "3.11", "3.12"], "x86_64": ["3.10", "3.11"]}
    assert m.find_torch_npu("1.11.0.post8").python == {"aarch64": [], "x86_64": []}  # not on PyPI
    assert m.find_torch_npu("2.1.0.post3").cann == ["8.0.RC1"]
    assert len(m.torch_npu_rows) >= 94


def test_failing_sources_are_reported_one_by_one(server, cache):
    good = f"{server}/{COMPAT}"
    bad = [
        f"{server}/html",
        f"{server}/missing",
        f"{server}/corrupt",
        f"{server}/renamed.md",
        f"{server}/truncated.json",
    ]
    res = cli("matrix", "refresh", *sum((["--source", s] for s in [*bad, good]), []), cache_dir=cache)
    assert res.returncode == 1, res.stdout + res.stderr  # partial: the good source was still written
    out = res.stdout
    assert f"FAILED  {server}/html: got an HTML page" in out
    assert f"FAILED  {server}/missing: HTTP 404" in out
    assert f"FAILED  {server}/corrupt: not UTF-8" in out
    assert f"FAILED  {server}/renamed.md: no torch_npu mapping table found" in out and "工具包版本" in out
    assert f"FAILED  {server}/truncated.json: not JSON" in out
    assert f"ok      {good}" in out
    assert load_matrix().provenance["origin"] == "cache"


def test_all_sources_failing_writes_nothing(server, cache):
    ok = refresh([f"{server}/{COMPAT}"])
    assert ok.written
    before = hashlib.sha256((cache / "matrix.json").read_bytes()).hexdigest()
    res = cli("matrix", "refresh", "--source", f"{server}/html", "--source", f"{server}/corrupt", cache_dir=cache)
    assert res.returncode == 3
    assert "no source could be read; the matrix in use is unchanged" in res.stderr
    assert hashlib.sha256((cache / "matrix.json").read_bytes()).hexdigest() == before
    assert load_matrix().provenance["origin"] == "cache"


def test_timeout(server, cache):
    started = time.monotonic()
    res = refresh([f"{server}/slow"], timeout=(1.0, 0.5))
    assert time.monotonic() - started < 3
    assert res.sources[0].ok is False and res.sources[0].error.startswith("timed out")
    assert res.error and res.written is None
    assert not (cache / "matrix.json").exists()
    assert load_matrix().provenance["origin"] == "bundled"


def test_half_written_cache_file_falls_back_to_bundled(server, cache):
    assert refresh([f"{server}/{COMPAT}"]).written
    data = (cache / "matrix.json").read_bytes()
    (cache / "matrix.json").write_bytes(data[: len(data) // 2])
    m = load_matrix()
    assert m.provenance["origin"] == "bundled"
    assert "matrix.json" in m.provenance["cache_error"]
    shown = cli("matrix", "show", "--cann", "8.0.0", cache_dir=cache)
    assert shown.returncode == 0
    check = cli("check", "--json", cache_dir=cache)
    codes = [f["code"] for f in json.loads(check.stdout)["findings"]]
    assert "MTX004" in codes


def test_unwritable_cache_dir_keeps_matrix_valid(server, tmp_path):
    # Tests run as root, so permission bits do not stop writes: put the cache "directory"
    # under a regular file, which no user can create directories in (ENOTDIR).
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    cache_dir = blocker / "cache"
    res = cli("matrix", "refresh", "--source", f"{server}/{COMPAT}", cache_dir=cache_dir)
    assert res.returncode == 3
    assert f"cannot write the matrix cache in {cache_dir}" in res.stderr
    shown = cli("matrix", "show", "--cann", "8.0.0", "--json", cache_dir=cache_dir)
    assert shown.returncode == 0 and json.loads(shown.stdout)["matrix"]["origin"] == "bundled"


def test_dry_run_and_diff(server, cache, tmp_path):
    edited = tmp_path / "COMPATIBILITY.md"
    text = (OFFICIAL / COMPAT).read_text(encoding="utf-8")
    text = text.replace(
        "| 2.12.0 | v2.12.0-26.1.0 |   2.12.0   |  CANN 9.1.0  |",
        "| 2.12.0 | v2.12.0-26.1.0 |   2.12.0   |  CANN 9.1.1  |",
    )
    text = text.replace(
        "|    2.12.0    | v2.12.0-26.1.0 |   2.12.0   |  CANN 9.1.0  |",
        "|    2.12.0    | v2.12.0-26.1.0 |   2.12.0   |  CANN 9.1.1  |",
    )
    text = text.replace(
        "|    2.11.0    | v2.11.0-26.1.0 |",
        "|    2.14.0    | v2.14.0-26.2.0 |   2.14.0   |  CANN 9.2.0  |\n|    2.11.0    | v2.11.0-26.1.0 |",
    )
    edited.write_text(text, encoding="utf-8")
    dry = cli("matrix", "refresh", "--dry-run", "--source", str(edited), cache_dir=cache)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "changed torch_npu 2.12.0: cann ['9.1.0'] -> ['9.1.1', '9.1.0']" in dry.stdout  # accumulates
    assert "added torch_npu 2.14.0 (torch 2.14.0, CANN 9.2.0, active)" not in dry.stdout  # 2.14.0 exists
    # its row (the 26.2.0 release notes) already pairs CANN 9.2.0: only the status moves
    assert "changed torch_npu 2.14.0: status 'release-notes-only' -> 'active'" in dry.stdout
    assert not (cache / "matrix.json").exists()
    assert cli("matrix", "refresh", "--source", str(edited), cache_dir=cache).returncode == 0
    diff = cli("matrix", "diff", cache_dir=cache)
    assert diff.returncode == 1
    assert "~ [torch_npu] 2.12.0: cann ['9.1.0'] -> ['9.1.1', '9.1.0']" in diff.stdout
    assert "~ [torch_npu] 2.14.0: status 'release-notes-only' -> 'active'" in diff.stdout
    same = cli("matrix", "diff", str(cache / "matrix.json"), str(cache / "matrix.json"), cache_dir=cache)
    assert same.returncode == 0
    assert cli("matrix", "diff", "only-one", cache_dir=cache).returncode == 2


def test_refresh_refuses_remote_plain_http_and_odd_schemes(cache):
    res = refresh(["http://example.com/COMPATIBILITY.md", "ftp://example.com/x"])
    errors = [s.error for s in res.sources]
    assert "plain http:// is refused" in errors[0]
    assert "unsupported URL scheme 'ftp'" in errors[1]
    assert res.written is None


def test_size_cap(tmp_path):
    big = tmp_path / "big.md"
    big.write_bytes(b"| a |\n" * 100)
    with pytest.raises(Exception, match="limit"):
        fetch(str(big), max_bytes=100)


def test_written_cache_is_a_valid_matrix_file(server, cache):
    assert refresh([f"{server}/{COMPAT}", f"{server}/{PYPI}"]).written
    m = load_from(str(cache / "matrix.json"), "file")
    assert m.provenance["retrieved"] and len(m.provenance["sha256"]) == 64
    assert cli("matrix", "verify", str(cache / "matrix.json"), cache_dir=cache).returncode == 0


@pytest.mark.network
def test_live_pypi_json(cache):
    res = refresh(["https://pypi.org/pypi/torch-npu/json"])
    assert res.sources[0].ok, res.sources[0].error
    assert res.written
    m = load_matrix()
    assert m.find_torch_npu("2.1.0.post10").python["aarch64"] == ["3.8", "3.9", "3.10", "3.11"]
    assert sum(r.on_pypi for r in m.torch_npu_rows) >= 67


# ---------------------------------------------------------------- a refresh that accumulates (issue 29)
def _edited_compat(tmp_path, extra_row):
    edited = tmp_path / "COMPATIBILITY-extra.md"
    text = (OFFICIAL / COMPAT).read_text(encoding="utf-8")
    anchor = "|    2.11.0    | v2.11.0-26.1.0 |"
    assert anchor in text
    edited.write_text(text.replace(anchor, extra_row + "\n" + anchor), encoding="utf-8")
    return edited


def test_a_later_partial_refresh_builds_on_the_earlier_one(server, cache, tmp_path):
    first = _edited_compat(tmp_path, "|    2.15.0    | v2.15.0-26.3.0 |   2.15.0   |  CANN 9.2.0  |")
    r1 = refresh([str(first)])
    assert r1.written and not r1.error, r1.error
    # the second refresh reads only an old README: the row the first one added stays
    r2 = refresh([f"{server}/pytorch-v2.6.0-README.md"])
    assert r2.written and not r2.error, r2.error
    row = load_matrix().find_torch_npu("2.15.0")
    assert row is not None and row.cann == ["9.2.0"] and load_matrix().provenance["origin"] == "cache"


def test_a_table_never_narrows_a_curated_cann_list_unless_replace(server, cache):
    url = f"{server}/{COMPAT}"
    kept = refresh([url], dry_run=True)
    assert not kept.error and not kept.dropped
    row = next(r for r in kept.data["torch_npu"] if r["torch_npu"] == "2.4.0.post2")
    assert row["cann"] == ["8.0.0", "8.0.0.beta1", "8.0.RC3.20"]
    replaced = refresh([url], dry_run=True, replace=True)
    assert not replaced.error
    row = next(r for r in replaced.data["torch_npu"] if r["torch_npu"] == "2.4.0.post2")
    assert row["cann"] == ["8.0.0"]
    assert "[[torch_npu]] 2.4.0.post2 cann 8.0.0.beta1, 8.0.RC3.20" in replaced.dropped
    assert "changed torch_npu 2.4.0.post2: cann ['8.0.0', '8.0.0.beta1', '8.0.RC3.20'] -> ['8.0.0']" in replaced.changes


def test_pypi_alone_writes_nothing_and_keeps_the_stamp(server, cache):
    ok = refresh([f"{server}/{COMPAT}"], today=__import__("datetime").date(2026, 12, 20))
    assert ok.written
    before = (cache / "matrix.json").read_bytes()
    res = cli("matrix", "refresh", "--source", f"{server}/{PYPI}", cache_dir=cache)
    assert res.returncode == 3
    assert "no official table answered (only the PyPI file list); nothing written" in res.stderr
    assert (cache / "matrix.json").read_bytes() == before
    assert load_matrix().provenance["retrieved"] == "2026-12-20"


def test_no_network_is_one_line_naming_the_host(cache):
    # nothing listens on port 9 of the loopback address: the connection is refused at once
    res = refresh([("https://127.0.0.1:9/COMPATIBILITY.en.md", "https://localhost:9/COMPATIBILITY.en.md")])
    (only,) = res.sources
    assert not only.ok and not res.written
    assert only.error == (
        "no mirror answered: https://127.0.0.1:9/COMPATIBILITY.en.md: no network to 127.0.0.1; "
        "https://localhost:9/COMPATIBILITY.en.md: no network to localhost"
    )
    for noise in ("urllib3", "HTTPSConnectionPool", "Max retries", "Errno", "\n"):
        assert noise not in only.error


@pytest.mark.parametrize(
    "table,message",
    [
        (
            "| TorchNPU版本 | TorchNPU发布版本 | PyTorch版本 | CANN版本 | 分支 |\n|---|---|---|---|---|\n"
            "| 2.9.0.post9 | 26.2.0 | 2.9.0 | CANN 9.2.0 | v2.9.0-26.2.0 |\n",
            "table at line 1: ambiguous columns 'TorchNPU版本' and 'TorchNPU发布版本'",
        ),
        (
            "| TorchNPU版本 | PyTorch版本 | CANN版本 | 代码分支 |\n|---|---|---|---|\n"
            "| 26.2.0 | 2.9.0 | 9.2.0 | v2.9.0-26.2.0 |\n",
            "table at line 1, row '26.2.0 | 2.9.0 | 9.2.0 | v2.9.0-26.2.0': torch_npu cell '26.2.0' is not a build "
            "for the PyTorch cell '2.9.0'",
        ),
    ],
)
def test_ambiguous_mapping_tables_are_refused_naming_file_and_row(cache, tmp_path, table, message):
    doc = tmp_path / "release_notes.md"
    doc.write_text(table, encoding="utf-8")
    res = cli("matrix", "refresh", "--dry-run", "--source", str(doc), cache_dir=cache)
    assert res.returncode == 3
    assert f"FAILED  {doc}: {message}" in res.stdout and "refused" in res.stdout


def test_version_names_the_matrix_date_and_source(server, cache):
    bundled = load_from(bundled_dir(), "bundled").provenance["retrieved"]
    plain = cli("--version", cache_dir=cache)
    assert plain.returncode == 0
    assert plain.stdout.splitlines()[1] == (
        f"matrix: bundled, data of {bundled} (official tables; sources: `npudoctor matrix verify`)"
    )
    url = f"{server}/{COMPAT}"
    assert refresh([url], today=__import__("datetime").date(2026, 12, 20)).written
    after = cli("--version", cache_dir=cache).stdout.splitlines()[1]
    assert after == (
        f"matrix: refreshed copy {cache / 'matrix.json'}, data of 2026-12-20 "
        f"(npudoctor matrix refresh: {url}); bundled data of {bundled}"
    )


def test_replace_lists_what_it_drops(server, cache):
    res = cli("matrix", "refresh", "--dry-run", "--replace", "--source", f"{server}/{COMPAT}", cache_dir=cache)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "  - [[torch_npu]] 2.4.0.post2 cann 8.0.0.beta1, 8.0.RC3.20" in res.stdout
    assert "  - [[torch_npu]] 1.11.0.rc2 cann 6.0.0" in res.stdout
    assert not (cache / "matrix.json").exists()
