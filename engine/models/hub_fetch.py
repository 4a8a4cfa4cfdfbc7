"""One file from the hub into the Hugging Face cache, resumable across runs.

huggingface_hub (2.x) downloads to a temporary file it deletes on failure, so a
cancelled or dropped download would start again from zero. This keeps the partial
bytes at `blobs/<etag>.part` and asks for the rest with a Range request, then lays
the file out as the cache does (`blobs/<etag>`, `snapshots/<commit>/<file>` linking
to it, `refs/main`), so huggingface_hub, mlx-lm and discovery find it. No MLX, no Qt.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

CHUNK = 1 << 20  # bytes read between progress reports and stop checks


def repo_folder(cache: str | Path, repo_id: str) -> Path:
    """The cache's folder of a model repo: models--org--name."""
    return Path(cache) / ("models--" + repo_id.replace("/", "--"))


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
    """
    import httpx
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    meta = get_hf_file_metadata(hf_hub_url(repo_id, filename, endpoint=endpoint))
    folder = repo_folder(cache, repo_id)
    etag = (meta.etag or "").strip('"') or filename.replace("/", "_")
    blob = folder / "blobs" / etag
    link = folder / "snapshots" / str(meta.commit_hash) / filename
    if not blob.exists():
        part = blob.with_name(f"{etag}.part")
        part.parent.mkdir(parents=True, exist_ok=True)
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-", "Accept-Encoding": "identity"} if have else {}
        with httpx.stream(
            "GET", meta.location, headers=headers, follow_redirects=True, timeout=30
        ) as r:
            if r.status_code >= 400:
                r.raise_for_status()
            if have and r.status_code != 206:  # the server ignored the Range: start over
                have = 0
            with open(part, "ab" if have else "wb") as f:
                report(have, meta.size)
                for chunk in r.iter_bytes(CHUNK):
                    f.write(chunk)
                    have += len(chunk)
                    report(have, meta.size)
                    if should_stop():
                        raise cancelled(have)
        if meta.size is not None and have != meta.size:
            raise OSError(f"{filename}: got {have:,} of {meta.size:,} bytes")
        os.replace(part, blob)
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.unlink(missing_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    refs = folder / "refs" / "main"
    refs.parent.mkdir(parents=True, exist_ok=True)
    refs.write_text(str(meta.commit_hash))
    return link
