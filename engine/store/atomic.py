"""Writing files so that nothing is ever half-written or silently replaced.

Every file the app writes (exports, settings, imported sessions, converted
models) goes to a temporary name in the same folder and is renamed into place
only when complete. `write_atomic(..., overwrite=False)` refuses to replace an
existing file: asking the user is the caller's job.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path

from engine.errors import LogitscopeError

_UMASK_LOCK = threading.Lock()


class WriteError(LogitscopeError):
    """A file could not be written; the message says where and what to do."""


def describe_os_error(e: OSError, path: Path | str) -> str:
    """One sentence for an OSError while writing `path`, with what to do about it."""
    import errno

    where = str(path)
    hints = {
        errno.ENOSPC: "the disk is full: free some space",
        errno.EDQUOT: "the disk quota is used up: free some space",
        errno.EROFS: "the disk is read-only: choose another folder",
        errno.EACCES: "permission denied: choose a folder you can write to",
        errno.EPERM: "permission denied: choose a folder you can write to",
        errno.ENOTDIR: "a file stands where a folder should be",
        errno.EISDIR: "that is a folder, not a file",
        errno.ENOENT: "the folder does not exist",
        errno.ENAMETOOLONG: "the name is too long",
    }
    hint = hints.get(e.errno, e.strerror or str(e))
    return f"could not write {where}: {hint}"


def write_atomic(path: Path | str, data: str | bytes, overwrite: bool = True) -> Path:
    """Write `data` to `path` through a temporary file and a rename.

    Args:
        overwrite: False refuses to replace an existing file (FileExistsError).

    Raises:
        WriteError: the folder is missing, read-only or full (one clear sentence).
        FileExistsError: `overwrite` is False and `path` exists.
    """
    path = Path(path)
    try:
        exists = path.exists()
    except OSError as e:  # a name too long, or not valid on this file system
        raise WriteError(describe_os_error(e, path)) from e
    if not overwrite and exists:
        raise FileExistsError(f"{path} already exists")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, _mode_for(path, exists))  # mkstemp's 0600 would hide exports
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            move_no_replace(tmp, path)
        tmp = None
    except FileExistsError:
        raise
    except OSError as e:
        raise WriteError(describe_os_error(e, path)) from e
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return path


def current_umask() -> int:
    """The process's umask (read by setting it and putting it back at once)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _mode_for(path: Path, exists: bool) -> int:
    """A replaced file keeps its mode; a new one gets the user's usual 0666 & ~umask."""
    if exists:
        with contextlib.suppress(OSError):
            return path.stat().st_mode & 0o7777
    return 0o666 & ~current_umask()


def move_no_replace(tmp: str | Path, path: Path) -> None:
    """Move `tmp` to `path` unless `path` exists (a hard link cannot replace).

    Raises:
        FileExistsError: `path` exists (`tmp` is left where it is).
        OSError: the move failed.
    """
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:  # filesystems without hard links: check, then rename
        if path.exists():
            raise FileExistsError(f"{path} already exists") from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)
