"""What the hub says, checked before it is used: repo ids, file names, commit ids,
ETags and numbers.

Model repositories are written by strangers and the hub may be anyone's server
(`$HF_ENDPOINT`), so no name, header or number from it is trusted. A name becomes a
path only once it is a plain relative path that stays inside its folder; a commit
id must be hex; an ETag that is not a plain hex digest is hashed into one; a number
outside the range a real repo could have is "unknown". Nothing here touches the
network, MLX or Qt.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from pathlib import Path

from engine.errors import ModelError, SettingsError

MAX_NAME_CHARS = 1000  # a file's path in a repo
MAX_PART_BYTES = 255  # one path component (the usual file system limit)
MAX_COUNT = 2**53  # bytes, downloads, parameters: beyond this a number is nonsense
_SEGMENT = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_-])?"
_REPO_ID = re.compile(rf"{_SEGMENT}/{_SEGMENT}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_DIGEST = re.compile(r"[0-9a-f]{32,128}")
_DRIVE = re.compile(r"[A-Za-z]:")


class HubError(ModelError):
    """The hub search or a download failed; the message says why in one line."""


class HubInputError(HubError, SettingsError):
    """What the person gave (a repo id, a file name) cannot name a hub file: exit 2."""


def shown(text: object, limit: int = 80) -> str:
    """`text` made safe to print in one line: control characters escaped, shortened."""
    s = "".join(
        c if unicodedata.category(c)[0] != "C" else repr(c)[1:-1] for c in str(text)[: limit + 1]
    )
    return s if len(s) <= limit else s[: limit - 1] + "…"


def check_repo_id(repo_id: object) -> str:
    """`repo_id` if it is a hub repo id `org/name`, else a HubInputError saying why.

    Letters, digits, `-`, `_` and `.` in each part, at most 96 characters, no `..`
    or `--` (the cache folder's separator), as the hub itself requires.
    """
    if not isinstance(repo_id, str) or not repo_id.strip():
        raise HubInputError("a hub repo id is needed, e.g. mlx-community/SmolLM2-135M-Instruct")
    if not _REPO_ID.fullmatch(repo_id) or ".." in repo_id or "--" in repo_id:
        raise HubInputError(
            f"'{shown(repo_id)}' is not a hub repo id: give it as org/name (letters, digits, "
            "'-', '_' and '.'; no '..' or '--'), e.g. mlx-community/SmolLM2-135M-Instruct"
        )
    return repo_id


def name_problem(name: object) -> str | None:
    """Why `name` cannot be a file's path inside a snapshot folder, or None if it can."""
    if not isinstance(name, str) or not name:
        return "an empty name"
    if len(name) > MAX_NAME_CHARS:
        return f"longer than {MAX_NAME_CHARS} characters"
    if any(unicodedata.category(c)[0] == "C" for c in name):
        return "a control character (NUL, newline …)"
    if "\\" in name:
        return "a backslash"
    if name.startswith("/") or _DRIVE.match(name):
        return "an absolute path"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "an empty, '.' or '..' component"
    if any(len(p.encode("utf-8", "replace")) > MAX_PART_BYTES for p in parts):
        return f"a component longer than {MAX_PART_BYTES} bytes"
    return None


def check_file_name(name: object, given: bool = False) -> str:
    """`name` if it is a safe relative path of a repo file, else a one-line HubError
    (a HubInputError when the person `given` it)."""
    why = name_problem(name)
    if why is None:
        return name  # type: ignore[return-value]
    kind = HubInputError if given else HubError
    source = "" if given else "the hub lists "
    raise kind(f"{source}file name '{shown(name)}' is not safe to write ({why}); nothing written")


def inside(folder: Path, name: str, root: Path | None = None) -> Path:
    """`folder / name`, checked to stay under `root` (`folder` by default) once links
    are resolved.

    Raises:
        HubError: the path would leave `root` (a link planted in the cache).
    """
    path = folder / check_file_name(name)
    if not path.parent.resolve().is_relative_to((root or folder).resolve()):
        raise HubError(
            f"'{shown(name)}' would be written outside {root or folder}; nothing written"
        )
    return path


def check_commit(value: object) -> str:
    """The commit id a hub sent (X-Repo-Commit), if it is 40 hex digits."""
    text = value.strip().lower() if isinstance(value, str) else ""
    if not _COMMIT.fullmatch(text):
        raise HubError(
            f"the hub sent no valid commit id (X-Repo-Commit: '{shown(value or '')}'); "
            "nothing written"
        )
    return text


def blob_name(etag: object, fallback: str) -> str:
    """A safe name for a file's blob: the ETag when it is a hex digest (as the hub's
    are), else the sha256 of the ETag (or of `fallback` when there is none)."""
    text = etag.strip() if isinstance(etag, str) else ""
    text = text.removeprefix("W/").strip('"').lower()
    if _DIGEST.fullmatch(text):
        return text
    return hashlib.sha256((text or fallback).encode("utf-8", "replace")).hexdigest()


def count(value: object) -> int | None:
    """A non-negative whole number the hub sent, or None when it is not one (a string,
    NaN, a float, a bool, or a number no repo could have)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_COUNT:
        return value
    return None


def size_header(value: object) -> int | None:
    """A size header (Content-Length, X-Linked-Size) as a number, or None."""
    text = value.strip() if isinstance(value, str) else ""
    return count(int(text)) if text.isdigit() and len(text) <= 17 else None
