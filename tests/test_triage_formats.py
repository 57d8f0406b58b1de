"""Log formats `npudoctor triage` reads (issue 28): codes in the middle of a line, loader lines
whose quotes were stripped, compressed logs read as streams (gzip, xz, bzip2; a truncated or
corrupt archive is named, a decompression bomb stays flat), binary files named as skipped,
crash lines linked to the warning/error just before them, and no internal kind ids in text."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import json
import lzma
import random
import re
import subprocess
import sys
from pathlib import Path

from clirun import npudoctor

from npudoctor.triage import CHUNK, Scanner, load_kb, rank

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _scan(data: bytes, name: str = "t") -> dict:
    sc = Scanner(load_kb())
    sc.feed(name, io.BytesIO(data))
    return rank(sc)


def _ids(doc: dict) -> list:
    return [(g["id"], g.get("label"), g["first"]["line"]) for g in doc["known"]]


# --------------------------------------------------------------------- line formats


def test_code_after_a_failed_prefix_is_found():
    doc = _scan(
        b"[ERROR] RUNTIME(9,python):2025-01-01 [api_c.cc:1]9 rtSetDevice failed. EL0003 The argument is invalid\n"
    )
    assert _ids(doc) == [("cann-code", "cann:EL0003", 1)]
    assert doc["unknown"] == []


def test_a_specific_code_after_err00100_wins_over_the_wrapper():
    line = b"[ERROR] 2025-06-03-14:54:23 (PID:8648, Device:0, RankID:-1) ERR00100 PTA call acl api failed. EL0003 The argument is invalid\n"
    assert _ids(_scan(line)) == [("cann-code", "cann:EL0003", 1)]
    # alone (or before a generic wrapper) the torch_npu code keeps the line
    bare = b"[ERROR] 2025-06-03-14:54:23 (PID:8648, Device:0, RankID:-1) ERR00100 PTA call acl api failed.\n"
    assert _ids(_scan(bare)) == [("pta-err00100-acl-call-failed", "pta:ERR00100", 1)]


def test_loader_version_line_without_quotes_is_found():
    for quoted in (b"`GLIBCXX_3.4.30'", b"GLIBCXX_3.4.30", b"'GLIBCXX_3.4.30'"):
        line = (
            b"ImportError: /lib/aarch64-linux-gnu/libstdc++.so.6: version "
            + quoted
            + b" not found (required by /x/libfoo.so)\n"
        )
        doc = _scan(line)
        assert _ids(doc) == [("loader-version-not-found", "loader:version-not-found", 1)], quoted
        assert doc["known"][0]["captures"]["version"] == "GLIBCXX_3.4.30"


# ------------------------------------------------------------------- compressed logs

LOG = (
    b"INFO step 1 loss 0.5\n"
    b"[ERROR] HCCL(1234,python):2025-01-01-00:00:00.000.000 [transport.cc:1] Communication_Error_Get_Socket(EI0006)\n"
) * 3


def test_gzip_xz_bzip2_logs_are_read(tmp_path):
    for suffix, pack in ((".gz", gzip.compress), (".xz", lzma.compress), (".bz2", bz2.compress)):
        path = tmp_path / f"plog-1{suffix}"
        path.write_bytes(pack(LOG))
        out = npudoctor("triage", str(path), "--no-facts", "--json")
        doc = json.loads(out.stdout)
        (src,) = doc["sources"]
        assert src["compressed"] == {".gz": "gzip", ".xz": "xz", ".bz2": "bzip2"}[suffix]
        assert (src["lines"], src["bytes"], src["error"]) == (6, len(LOG), None)
        assert [(g["id"], g["count"]) for g in doc["known"]] == [("ei0006-socket-timeout", 3)]


def test_compressed_logs_in_a_directory_are_found(tmp_path):
    (tmp_path / "plog-1.log.gz").write_bytes(gzip.compress(LOG))
    (tmp_path / "model.bin.gz").write_bytes(gzip.compress(LOG))
    doc = json.loads(npudoctor("triage", str(tmp_path), "--no-facts", "--json").stdout)
    assert [Path(s["name"]).name for s in doc["sources"]] == ["plog-1.log.gz"]


def test_truncated_and_corrupt_archives_are_named(tmp_path):
    packed = gzip.compress(LOG * 1000)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    bad = tmp_path / "bad.log.xz"
    bad.write_bytes(lzma.compress(LOG)[:12] + b"\x00garbage" * 50)
    for path, kind in ((cut, "gzip"), (bad, "xz")):
        out = npudoctor("triage", str(path), "--no-facts")
        assert out.returncode in (0, 1), out.stderr
        assert f"{path}: read stopped: truncated or corrupt {kind} archive" in out.stdout, out.stdout
        assert "Traceback" not in out.stdout + out.stderr


def _peak_rss_kib(path: Path) -> tuple:
    code = (
        "import resource,sys;from npudoctor.cli.commands.triage import run_triage;"
        "from npudoctor.session.request import MachineRequest;"
        f"rc=run_triage([{str(path)!r}],MachineRequest(json=True),no_facts=True);"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    return json.loads(proc.stdout), int(proc.stderr.decode().strip().splitlines()[-1])


def test_decompression_bomb_stays_flat(tmp_path):
    """64 MiB of one line without a newline, compressed to a few dozen KiB: read in steps,
    the line cut at the line bound; peak memory is that of a small log."""
    small = tmp_path / "small.log.gz"
    small.write_bytes(gzip.compress(LOG))
    bomb = tmp_path / "bomb.log.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        fh.write(LOG)
        block = b"A" * (1 << 20)
        for _ in range(64):
            fh.write(block)
        fh.write(b"\nret is -8020\n")
    assert bomb.stat().st_size < 1 << 20
    doc_small, peak_small = _peak_rss_kib(small)
    doc_bomb, peak_bomb = _peak_rss_kib(bomb)
    src = doc_bomb["sources"][0]
    assert src["bytes"] > 64 << 20 and src["long_lines"] == 1 and src["error"] is None
    assert [g["id"] for g in doc_bomb["known"]] == ["ei0006-socket-timeout", "dcmi-8020-device-used"]
    assert peak_bomb - peak_small < 16 * 1024, (peak_small, peak_bomb)


# ---------------------------------------------------------------------- binary files


def test_binary_file_is_named_as_skipped(tmp_path):
    elf = tmp_path / "core.log"
    with open(sys.executable, "rb") as fh:  # a real ELF executable
        elf.write_bytes(fh.read(1 << 16))
    out = npudoctor("triage", str(elf), "--no-facts")
    # no input is a text log: nothing could be read, the help's "2 usage error (unreadable log)"
    assert out.returncode == 2
    assert f"{elf}: skipped: a binary file, not a text log" in out.stdout
    assert "Nothing was scanned: no input is a text log." in out.stdout
    assert "No known error signature" not in out.stdout
    proc = npudoctor("triage", str(elf), "--no-facts", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 and doc["exit_code"] == 2
    assert doc["sources"][0]["skipped"] == "a binary file, not a text log"
    assert doc["sources"][0]["lines"] == 0
    # beside a text log the binary one is skipped and the run judges what it read
    text = tmp_path / "app.log"
    text.write_text("epoch 1 done\n")
    both = npudoctor("triage", str(elf), str(text), "--no-facts")
    assert both.returncode == 0 and "No known error signature and no error-looking line found." in both.stdout
    error = tmp_path / "err.log"
    error.write_text("ImportError: libhccl.so: cannot open shared object file\n")
    assert npudoctor("triage", str(elf), str(error), "--no-facts").returncode == 1


def test_empty_log_is_read_and_finds_nothing(tmp_path):
    """An empty file is a readable log with no lines (a run that printed nothing): exit 0,
    "nothing found" -- not the binary case."""
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    out = npudoctor("triage", str(empty), "--no-facts")
    assert out.returncode == 0
    assert "No known error signature and no error-looking line found." in out.stdout
    assert "skipped" not in out.stdout and "Nothing was scanned" not in out.stdout


def test_a_log_after_a_copytruncate_hole_of_nuls_is_read(tmp_path):
    """logrotate's copytruncate empties a log that a process goes on writing at its offset:
    the file starts with that many NUL bytes, then the text.  The NULs are dropped, the text
    is read (line numbers its own), whether the hole is 4 KiB or longer than a read step."""
    for hole in (4096, 3 * CHUNK + 5):
        path = tmp_path / f"train-{hole}.log"
        path.write_bytes(b"\0" * hole + LOG)
        proc = npudoctor("triage", str(path), "--no-facts", "--json")
        assert proc.returncode == 1, proc.stdout
        doc = json.loads(proc.stdout)
        (src,) = doc["sources"]
        assert (src["skipped"], src["lines"], src["bytes"]) == (None, 6, hole + len(LOG))
        (group,) = doc["known"]
        assert (group["id"], group["count"], group["first"]["line"]) == ("ei0006-socket-timeout", 3, 2)
        assert group["sample"].startswith("[ERROR] HCCL(1234,python)")


def test_a_utf16_log_with_its_bom_is_read(tmp_path):
    """A log a Windows shell redirected (PowerShell's ``>`` writes UTF-16 with a byte order
    mark, CRLF line ends) is read as the text it holds, in either byte order."""
    text = LOG.decode().replace("\n", "\r\n") + "ImportError: libatb.so: cannot open shared object file: 无此文件\r\n"
    for encoding in ("utf-16-le", "utf-16-be"):
        bom = codecs.BOM_UTF16_LE if encoding == "utf-16-le" else codecs.BOM_UTF16_BE
        path = tmp_path / f"run-{encoding}.log"
        path.write_bytes(bom + text.encode(encoding))
        proc = npudoctor("triage", str(path), "--no-facts", "--json")
        assert proc.returncode == 1, proc.stdout
        doc = json.loads(proc.stdout)
        assert (doc["sources"][0]["skipped"], doc["sources"][0]["lines"]) == (None, 7)
        assert [(g["id"], g["count"], g["first"]["line"]) for g in doc["known"]] == [
            ("ei0006-socket-timeout", 3, 2),
            ("atb-library-not-found", 1, 7),
        ]
        assert doc["known"][1]["sample"] == "ImportError: libatb.so: cannot open shared object file: 无此文件"


def test_a_utf8_bom_is_not_quoted(tmp_path):
    """A log saved with a UTF-8 byte order mark (Notepad, PowerShell's utf8 encoding) is read
    without it: its first line is quoted as it reads, from a file, gzipped or from stdin."""
    text = FIXTURES.joinpath("error_import-torch_npu_libhccl-not-found_PTA-ERR00008.txt").read_bytes()
    first = text.decode().splitlines()[0]
    assert first.startswith("ImportError: libhccl.so: cannot open shared object file")
    data = codecs.BOM_UTF8 + text
    plain, packed = tmp_path / "run.log", tmp_path / "run.log.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    for args, stdin in (([str(plain)], None), ([str(packed)], None), (["-"], data)):
        doc = json.loads(npudoctor("triage", *args, "--no-facts", "--json", input=stdin).stdout)
        assert (doc["sources"][0]["lines"], doc["sources"][0]["bytes"]) == (2, len(data))
        assert [(g["id"], g["first"]["line"], g["sample"]) for g in doc["known"]][0] == (
            "cann-library-not-found",
            1,
            first,
        )
    shown = npudoctor("triage", str(plain), "--no-facts").stdout
    assert "\ufeff" not in shown
    assert f"\n    {first}\n" in shown
    unknown = tmp_path / "unknown.log"
    unknown.write_bytes(codecs.BOM_UTF8 + b"RuntimeError: worker 3 exited with code 1\n")
    doc = json.loads(npudoctor("triage", str(unknown), "--no-facts", "--json").stdout)
    assert [(u["text"], u["first"]["line"]) for u in doc["unknown"]] == [
        ("RuntimeError: worker 3 exited with code 1", 1)
    ]


def test_random_bytes_and_executables_stay_binary_with_or_without_a_hole(tmp_path):
    """Random bytes (one in ten a control byte) and an ELF executable are still skipped, also
    behind a run of NULs or a UTF-16 byte order mark; latin-1 text that starts like one is read."""
    rng = random.Random(20261206)
    with open(sys.executable, "rb") as fh:
        elf = fh.read(1 << 16)
    inputs = [bytes(rng.getrandbits(8) for _ in range(size)) for size in (512, 8192, 1 << 16)]
    inputs += [b"\0" * 4096 + inputs[1], codecs.BOM_UTF16_LE + inputs[1], elf]
    for i, data in enumerate(inputs):
        path = tmp_path / f"blob{i}.log"
        path.write_bytes(data)
        doc = json.loads(npudoctor("triage", str(path), "--no-facts", "--json").stdout)
        assert doc["sources"][0]["skipped"] == "a binary file, not a text log", i
    latin = tmp_path / "latin.log"
    latin.write_bytes("ÿþ garbage\n".encode("latin-1") + LOG)
    doc = json.loads(npudoctor("triage", str(latin), "--no-facts", "--json").stdout)
    assert [(g["id"], g["first"]["line"]) for g in doc["known"]] == [("ei0006-socket-timeout", 3)]


def test_stray_nul_bytes_do_not_make_a_log_binary():
    doc = _scan(b"\x00\x00 crashed here\nImportError: libhccl.so: cannot open shared object file\n")
    assert doc["sources"][0]["skipped"] is None
    assert [g["id"] for g in doc["known"]] == ["cann-library-not-found"]


# ------------------------------------------------------------------------ crash lines


def test_crash_line_is_linked_to_the_line_before_it():
    log = (
        b"ImportError: libhccl.so: cannot open shared object file: No such file or directory\n"
        b"INFO 03-01 12:00:00 loading weights\n"
        b"/usr/lib/python3/site-packages/torch_npu/__init__.py:10: UserWarning: something went odd\n"
        b"Segmentation fault (core dumped)\n"
        b"./run.sh: line 3: 1234 Bus error               python train.py\n"
    )
    doc = _scan(log)
    crashes = [g for g in doc["known"] if g["id"] == "process-crashed"]
    assert [(g["captures"]["how"], g["first"]["line"]) for g in crashes] == [
        ("Segmentation fault", 4),
        ("Bus error", 5),
    ]
    assert crashes[0]["after"]["line"] == 3 and "UserWarning: something went odd" in crashes[0]["after"]["text"]
    assert crashes[0]["after"]["id"] is None
    # a crash after a crash follows the last warning/error, not the first crash
    assert crashes[1]["after"]["line"] == 3
    lib = _scan(log.splitlines(keepends=True)[0] + b"Segmentation fault\n")
    crash = next(g for g in lib["known"] if g["id"] == "process-crashed")
    assert crash["after"] == {
        "source": "t",
        "line": 1,
        "text": log.splitlines()[0].decode(),
        "id": "cann-library-not-found",
    }


def test_crash_text_names_the_line_it_follows(tmp_path):
    log = tmp_path / "crash.log"
    log.write_bytes(
        b"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
        b"Bus error (core dumped)\n"
    )
    out = npudoctor("triage", str(log), "--no-facts").stdout
    assert "after line 1: ERROR: Unexpected bus error encountered in worker" in out
    # the shared-memory signature names the cause; the crash says once where to look
    assert "it follows dataloader-shared-memory (above): fix that one first" in out
    assert "fix the first error above this line" not in out


def test_words_in_a_sentence_are_no_crash():
    doc = _scan(
        b"RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.\nthe Segmentation fault handler is installed\n"
    )
    assert "process-crashed" not in [g["id"] for g in doc["known"]]


# ------------------------------------------------------------------ no internal ids


def test_text_view_prints_no_kind_ids(tmp_path):
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"schema_version": 1, "facts": {"cann": {"toolkits": [], "selected": None}}}))
    sample = FIXTURES / "error_npu-smi_dcmi-8005_after-fw-upgrade-no-reboot.txt"
    out = npudoctor("triage", str(sample), "--from", str(snap)).stdout
    assert "npu-smi -8005" in out
    assert not re.search(r"\bK(?:0[1-9]|1\d|2[0-2])\b", out), out


def test_damaged_archives_never_raise():
    """Cuts after the magic bytes and a flipped byte of each format end the read with an error
    naming the format: never a traceback."""
    for kind, pack in (("gzip", gzip.compress), ("xz", lzma.compress), ("bzip2", bz2.compress)):
        packed = pack(LOG * 200)
        damaged = [packed[:n] for n in (6, 12, len(packed) // 3, len(packed) - 1)]
        flipped = bytearray(packed)
        flipped[len(flipped) // 2] ^= 0xFF
        damaged.append(bytes(flipped))
        for data in damaged:
            sc = Scanner(load_kb())
            stats = sc.feed("x", io.BytesIO(data))
            assert stats.compressed == kind
            assert stats.error is not None and stats.error.startswith(f"truncated or corrupt {kind} archive"), (
                kind,
                len(data),
                stats.error,
            )


def test_compressed_stdin_is_read(tmp_path):
    out = npudoctor("triage", "-", "--no-facts", "--json", input=gzip.compress(LOG), text=False)
    doc = json.loads(out.stdout)
    assert doc["sources"][0]["compressed"] == "gzip"
    assert [(g["id"], g["count"]) for g in doc["known"]] == [("ei0006-socket-timeout", 3)]
