"""Moving bundle files safely: streamed sha256, a copy or an HTTP download that lands
under its final name only when complete (``*.part`` then rename), and the plausibility
check of an Ascend ``.run`` package."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from typing import Any, Callable, Optional, Tuple

from npudoctor import lazyre
from npudoctor.host import open_regular

_CHUNK = 1 << 20


def sha256_file(path: str, progress: Optional[Callable[[int], None]] = None) -> str:
    """Hex sha256 of a regular file (streamed).  ``progress(n_bytes)`` is called per chunk.
    Raises ``OSError`` (a FIFO or device is refused, see :func:`npudoctor.host.open_regular`)."""
    h = hashlib.sha256()
    with open_regular(path) as fh:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            h.update(chunk)
            if progress:
                progress(len(chunk))
    return h.hexdigest()


# Column widths of the transfer bar: 24 + 12 + 19 + 11 + 8 and four separating spaces make
# 78, so that the bar fits an 80-column terminal and the figures are never cut.
_DESC_WIDTH = 24


def progress_bar(enabled: bool, console: Any = None) -> Any:
    """A rich Progress for byte transfers drawn on stderr (None when disabled: the caller
    enables it only when stderr is a terminal).  Its columns have fixed widths that fit
    80 columns; a long file name is shortened (with an ellipsis), the figures never are."""
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.table import Column

    def fixed(width: int) -> Column:
        return Column(width=width, no_wrap=True, overflow="ellipsis")

    return Progress(
        TextColumn("{task.description}", table_column=fixed(_DESC_WIDTH)),
        BarColumn(bar_width=12, table_column=fixed(12)),
        DownloadColumn(table_column=Column(min_width=19, no_wrap=True, justify="right")),
        TransferSpeedColumn(table_column=Column(min_width=11, no_wrap=True, justify="right")),
        TimeRemainingColumn(table_column=Column(min_width=8, no_wrap=True)),
        console=console if console is not None else Console(stderr=True),
        transient=False,
        expand=False,
    )


@contextlib.contextmanager
def phase(enabled: bool, text: str) -> Any:
    """A spinner with ``text`` on stderr while a phase that can take seconds runs (resolving
    the set, asking pip, reading sizes); nothing when disabled (stderr not a terminal)."""
    if not enabled:
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(text, spinner="line"):
        yield


def copy_checked(src: str, dest: str, progress: Any = None) -> str:
    """Copy ``src`` to ``dest`` via ``dest + '.part'`` (renamed when complete), hashing
    on the way; returns the sha256.  Raises ``OSError``."""
    part = dest + ".part"
    h = hashlib.sha256()
    size = os.path.getsize(src)
    task = progress.add_task(f"copy {os.path.basename(src)}", total=size) if progress else None
    try:
        with open_regular(src) as fin, open(part, "wb") as fout:
            while True:
                chunk = fin.read(_CHUNK)
                if not chunk:
                    break
                h.update(chunk)
                fout.write(chunk)
                if progress:
                    progress.update(task, advance=len(chunk))
            fout.flush()
            os.fsync(fout.fileno())
        os.replace(part, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
    return h.hexdigest()


ASCEND_REFERER = "https://www.hiascend.com/"


def ca_bundle() -> Any:
    """The CA bundle HTTPS downloads verify against: pip's own (``PIP_CERT``) when it names
    a file, so what pip reached we reach too; else requests' default (``True``, which
    honours ``REQUESTS_CA_BUNDLE``)."""
    cert = os.environ.get("PIP_CERT")
    return cert if cert and os.path.isfile(cert) else True


def fetch_url(
    url: str,
    dest: str,
    progress: Any = None,
    timeout: float = 60.0,
    referer: Optional[str] = ASCEND_REFERER,
    auth: Optional[Tuple[str, str]] = None,
) -> str:
    """Download ``url`` to ``dest`` via ``dest + '.part'``, by default with ``Referer:
    https://www.hiascend.com/`` (what Ascend's download host expects, as the official image
    builds send it; None sends none); ``auth`` = (user, password) for HTTP basic auth;
    resumes a previous ``.part`` with an HTTP Range request.  ``file:`` URLs are copied.
    Returns the sha256.  Raises ``OSError`` (network errors included)."""
    import requests

    if url.startswith("file:"):
        from urllib.parse import unquote, urlsplit

        return copy_checked(unquote(urlsplit(url).path), dest, progress)
    part = dest + ".part"
    have = os.path.getsize(part) if os.path.exists(part) else 0
    headers = {"Referer": referer} if referer else {}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        with requests.get(url, headers=headers, stream=True, timeout=timeout, auth=auth, verify=ca_bundle()) as resp:
            if resp.status_code == 416:  # already complete
                resp.close()
            elif resp.status_code not in (200, 206):
                raise OSError(f"{url}: HTTP {resp.status_code}")
            else:
                mode = "ab" if resp.status_code == 206 and have else "wb"
                if mode == "wb":
                    have = 0
                total = int(resp.headers.get("Content-Length") or 0) + have
                task = progress.add_task(f"fetch {os.path.basename(dest)}", total=total or None) if progress else None
                if progress:
                    progress.update(task, advance=have)
                with open(part, mode) as fh:
                    for chunk in resp.iter_content(_CHUNK):
                        fh.write(chunk)
                        if progress:
                            progress.update(task, advance=len(chunk))
    except requests.RequestException as exc:
        raise OSError(f"{url}: {exc}") from None
    digest = sha256_file(part)
    os.replace(part, dest)
    return digest


_MAKESELF = lazyre.pattern(rb"makeself|MS_Printf|label=", re.I)


def check_run_file(path: str) -> Optional[str]:
    """Why ``path`` is not a plausible Ascend ``.run`` package (a makeself shell archive
    starting with ``#!``), or ``None`` when it looks right."""
    try:
        size = os.path.getsize(path)
        with open_regular(path) as fh:
            head = fh.read(16384)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if size == 0:
        return "empty file"
    if not head.startswith(b"#!"):
        return "not a self-extracting .run archive (no #! shell header)"
    if not _MAKESELF.search(head):
        return "no makeself header in the first 16 KiB (a truncated or HTML error page?)"
    return None
