"""Content hashes of model files, computed once (with progress) and remembered.

A converted model is keyed on its source's content, not its name or size: a
damaged download and the good file under the same name get different keys.
The sha256 of a file is cached by (real path, size, mtime) in the models folder,
so reopening a multi-GB file does not hash it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

CHUNK = 8 * 1024 * 1024
REPORT_ABOVE = 64 * 1024 * 1024  # smaller files hash in well under a second
CACHE_NAME = ".hashes.json"


def _cache_path() -> Path:
    from engine.store.paths import models_dir

    return models_dir() / CACHE_NAME


def _load_cache() -> dict:
    from engine.store.runtime_cache import read_cache

    try:
        return read_cache(_cache_path())  # damaged or special: {} (hashed again), said once
    except OSError:  # the models folder cannot be made
        return {}


def folder_files_key(folder: Path | str, *patterns: str) -> tuple:
    """Names the files of `folder` matching `patterns` as they are on disk now: the
    folder's real path and each file's name, size and modification time. A rewritten
    file gives another key (what a per-process cache of those files is keyed on).

    Raises:
        OSError: a file cannot be stat'ed.
    """
    folder = Path(folder)
    files = sorted({f for pattern in patterns for f in folder.glob(pattern)})
    stamps = tuple((f.name, st.st_size, st.st_mtime_ns) for f in files for st in [f.stat()])
    return (str(folder.resolve()), stamps)


def content_hash(path: Path | str, progress=None) -> str:
    """The file's sha256 (hex), from the cache when the file has not changed.

    Args:
        progress: optional (message, fraction) callback for large files.
    """
    path = Path(path)
    stat = path.stat()
    key = f"{os.path.realpath(path)}|{stat.st_size}|{stat.st_mtime_ns}"
    cache = _load_cache()
    if isinstance(cache.get(key), str):
        return cache[key]
    h = hashlib.sha256()
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            if progress and stat.st_size > REPORT_ABOVE:
                progress(f"Checking {path.name}…", 0.05 + 0.4 * done / stat.st_size)
    digest = h.hexdigest()
    prefix = key.rsplit("|", 2)[0] + "|"
    cache = {k: v for k, v in cache.items() if not k.startswith(prefix)}  # older versions
    cache[key] = digest
    with contextlib.suppress(Exception):  # a cache we cannot write only costs time
        from engine.store.atomic import write_atomic

        write_atomic(_cache_path(), json.dumps(cache))
    return digest
