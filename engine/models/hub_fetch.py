"""One file from the hub into the Hugging Face cache, resumable across runs.

huggingface_hub (2.x) downloads to a temporary file it deletes on failure, so a
cancelled or dropped download would start again from zero. This keeps the partial
bytes at `blobs/<etag>.part` and asks for the rest with a Range request, then lays
the file out as the cache does (`blobs/<etag>`, `snapshots/<commit>/<file>` linking
to it, `refs/main`), so huggingface_hub, mlx-lm and discovery find it.

Nothing the hub says becomes a path unchecked (hub_names): the file name must be a
plain relative path inside the snapshot folder, the commit 40 hex digits, the ETag a
hex digest (else it is hashed). The body may not exceed the announced size, and a
download that brings fewer than STALL_BYTES in STALL_S seconds stops with a HubError.
No MLX, no Qt.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urljoin

from engine.models import hub_http
from engine.models.hub_names import (
    HubError,
    blob_name,
    check_commit,
    check_file_name,
    check_repo_id,
    inside,
    shown,
    size_header,
)

CHUNK = 1 << 20  # bytes read between progress reports and stop checks
STALL_S = 30.0  # a download bringing fewer than STALL_BYTES in this many seconds stops
STALL_BYTES = 16 * 1024


def repo_folder(cache: str | Path, repo_id: str) -> Path:
    """The cache's folder of a model repo: models--org--name (the id checked first)."""
    return Path(cache) / ("models--" + check_repo_id(repo_id).replace("/", "--"))


def file_url(endpoint: str, repo_id: str, filename: str, revision: str = "main") -> str:
    """The hub's address of a file (`/{repo}/resolve/{revision}/{file}`)."""
    return f"{endpoint}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(filename)}"


def fetch_file(
    repo_id: str,
    filename: str,
    endpoint: str,
    cache: str | Path,
    report: Callable[[int, int | None], None],
    should_stop: Callable[[], bool],
    cancelled: Callable[[int], Exception],
) -> Path:
    """Download `filename` of `repo_id` into the cache (resuming a partial one).

    Args:
        repo_id: "org/name".
        filename: the file's path in the repo.
        endpoint: the hub's address.
        cache: the Hugging Face cache folder.
        report: called with (bytes so far, total) as bytes arrive.
        should_stop: polled between chunks.
        cancelled: builds the exception raised when `should_stop` says so.

    Returns:
        The file's path in the snapshot folder.

    Raises:
        HubError: an unsafe name or header, an error answer, a stalled or dropped
            connection, a body of the wrong size.
    """
    folder = repo_folder(cache, repo_id)
    check_file_name(filename)
    what = f"downloading {repo_id}/{shown(filename)}"
    _, headers, url = hub_http.head(file_url(endpoint, repo_id, filename), endpoint, what)
    commit = check_commit(headers.get("x-repo-commit"))
    etag = blob_name(headers.get("x-linked-etag") or headers.get("etag"), f"{commit}/{filename}")
    size = size_header(headers.get("x-linked-size") or headers.get("content-length"))
    location = headers.get("location") or url
    link = inside(folder / "snapshots" / commit, filename, root=folder)
    blob = inside(folder / "blobs", etag, root=folder)
    if not blob.is_file():
        if size is None:  # an endless body would fill the disk
            raise HubError(f"{what}: the hub did not say the file's size; nothing written")
        rep = _Reporter(report, should_stop, cancelled, what, size)
        _fetch_blob(blob, urljoin(url, location), endpoint, rep)
    try:
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()  # relinked every time: a stale or planted link never survives
        os.symlink(os.path.relpath(blob, link.parent), link)
    except OSError as e:  # a file where a folder goes, or a folder where the file goes
        raise HubError(
            f"{what}: it cannot be placed in the cache, another file of the repo is in "
            f"the way ({e.strerror or e})"
        ) from e
    refs = folder / "refs" / "main"
    refs.parent.mkdir(parents=True, exist_ok=True)
    refs.write_text(commit)
    return link


class _Reporter:
    """Progress every CHUNK bytes, the stop check after each report, the stall rule."""

    def __init__(self, report, should_stop, cancelled, what: str, size: int | None):
        self.report, self.should_stop, self.cancelled = report, should_stop, cancelled
        self.what, self.size, self.last = what, size, -1
        self.window_start, self.window_bytes = time.monotonic(), 0

    def now(self, have: int) -> None:
        """Report `have` bytes (once per count)."""
        if have != self.last:
            self.last = have
            self.report(have, self.size)

    def arrived(self, have: int, new: int) -> None:
        """`new` more bytes arrived, `have` in all: report, check stop and stall."""
        now = time.monotonic()
        self.window_bytes += new
        if now - self.window_start >= STALL_S:
            if self.window_bytes < STALL_BYTES:
                raise HubError(
                    f"{self.what}: the hub sent only {self.window_bytes:,} bytes in "
                    f"{now - self.window_start:.0f} s; download again to resume"
                )
            self.window_start, self.window_bytes = now, 0
        if have - self.last >= CHUNK or have == self.size:
            self.now(have)
            if self.should_stop():
                raise self.cancelled(have)


def _fetch_blob(blob: Path, url: str, hub: str, rep: _Reporter) -> None:
    """Fetch `url` into `blob`, resuming `blob.part`; only a whole file is renamed."""
    what, size = rep.what, rep.size
    part = blob.with_name(f"{blob.name}.part")
    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.is_file() else 0
    if have > size:  # longer than the file: not a part of it
        have = 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with hub_http.stream(url, hub, what, headers) as r:
            if have and r.status_code != 206:  # the server ignored the Range: start over
                have = 0
            elif have and not r.headers.get("content-range", "").startswith(f"bytes {have}-"):
                raise HubError(f"{what}: the hub sent another part of the file than asked")
            with open(part, "ab" if have else "wb") as f:
                rep.now(have)
                for chunk in r.iter_bytes():
                    if have + len(chunk) > size:
                        f.truncate(0)
                        raise HubError(
                            f"{what}: the hub sent more than the {size:,} bytes it announced"
                        )
                    f.write(chunk)
                    have += len(chunk)
                    rep.arrived(have, len(chunk))
            rep.now(have)
    except HubError:
        raise
    except Exception as e:  # noqa: BLE001 - the HTTP library's and the disk's errors
        raise hub_http.translate(e, what, resume=True) from e
    if have != size:
        raise HubError(f"{what}: got {have:,} of {size:,} bytes; download again to resume")
    os.replace(part, blob)
