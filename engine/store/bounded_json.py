"""JSON read from outside the program (files on disk, standard input, a request body)
with limits checked before the parser runs.

`json.loads` recurses once per nesting level (100,000 `[` raise RecursionError), turns a
400-digit literal into an int or float that overflows later, and reads `1e999` as inf.
`loads` scans the text first, iteratively and outside strings only, and refuses nesting
deeper than MAX_DEPTH or a number literal longer than MAX_NUMBER_CHARS with
JsonLimitError (a ValueError) naming the limit and the line; a float that overflows to
inf is refused the same way. Malformed JSON still raises json.JSONDecodeError, as
`json.loads` does.

`read_bounded` reads a file's bytes without ever hanging or growing without limit:
a FIFO, a device, a socket (or a link to one) is refused in words before any read, the
file is opened with O_NONBLOCK so a FIFO swapped in meanwhile cannot block, and at most
max_bytes + 1 bytes are read. Its errors are FileRefused (a SettingsError) with
`reason` saying which case it was.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from engine.errors import SettingsError

MAX_DEPTH = 64  # nesting levels of [ and { the parser may see
MAX_NUMBER_CHARS = 100  # characters of one number literal
READ_CHUNK_BYTES = 1 << 16  # read_bounded reads this much at a time

# Outside strings: a string (its closing quote optional, so an unterminated one runs to
# the end instead of being scanned as code), a bracket, or a run of number characters.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]|[\]}]|[-0-9][-+0-9.eE]*', re.DOTALL)

# What a non-regular file is called in messages (by stat's S_IS* test).
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class JsonLimitError(ValueError):
    """JSON refused before parsing: too deep, a number too long, or a float overflowing.

    Attributes:
        words: the limit passed, in words ("nests deeper than 64 levels").
        line: the line of the text where it was passed (1-based).
        detail: both, without naming the text ("nests deeper than 64 levels (line 3)"),
            for callers that say it in their own sentence.
    """

    def __init__(self, what: str, words: str, line: int):
        self.words, self.line, self.detail = words, line, f"{words} (line {line})"
        super().__init__(f"{what} {self.detail}: it is damaged or not meant for this program")


class FileRefused(SettingsError):
    """read_bounded refused a file.

    Attributes:
        reason: "missing", "special" (FIFO, device, socket, folder), "too_large" or
            "unreadable" (any other OSError).
        detail: what was wrong without naming the file ("is not a regular file (a
            FIFO)"), for callers that say it in their own sentence.
    """

    def __init__(self, what: str, detail: str, todo: str, reason: str):
        super().__init__(f"{what} {detail}: {todo}")
        self.reason = reason
        self.detail = detail


def loads(
    data: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    max_number_chars: int = MAX_NUMBER_CHARS,
    what: str = "the JSON",
) -> object:
    """`json.loads(data)` once the text has passed the limits.

    Args:
        data: the JSON text (bytes are decoded as json.loads does: UTF-8, -16 or -32).
        max_depth: the deepest nesting of [ and { allowed.
        max_number_chars: the longest number literal allowed.
        what: names the text in messages ("runtime/paths.json", "line 3 of q.jsonl").

    Raises:
        JsonLimitError: too deep, a number too long, or a float overflowing to inf
            (the message names the limit and the line).
        ValueError: not JSON (json.JSONDecodeError) or bytes that do not decode.
    """
    text = (
        data.decode(json.detect_encoding(data), "surrogatepass")
        if isinstance(data, bytes)
        else data
    )
    check_limits(text, max_depth=max_depth, max_number_chars=max_number_chars, what=what)
    return json.loads(text)


def check_limits(
    text: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_number_chars: int = MAX_NUMBER_CHARS,
    what: str = "the JSON",
) -> None:
    """Raise JsonLimitError if `text` nests deeper than `max_depth`, holds a number
    literal longer than `max_number_chars` or a float that overflows (outside strings)."""
    depth = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        first = tok[0]
        if first == '"':
            continue
        if first in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonLimitError(
                    what, f"nests deeper than {max_depth} levels", _line(text, m.start())
                )
        elif first in "]}":
            depth = max(0, depth - 1)
        elif len(tok) > max_number_chars:
            raise JsonLimitError(
                what,
                f"holds a number longer than {max_number_chars} characters",
                _line(text, m.start()),
            )
        elif "e" in tok or "E" in tok or "." in tok:
            try:
                value = float(tok)
            except ValueError:
                continue  # not a number: json.loads says where
            if value in (float("inf"), float("-inf")):
                raise JsonLimitError(
                    what, "holds a number too large for a float", _line(text, m.start())
                )


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def special_kind(mode: int) -> str | None:
    """What a file of st_mode `mode` is called if it is not a regular file ("a FIFO"),
    else None."""
    for test, name in _SPECIAL_KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_bounded(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file `path`, refused beyond `max_bytes`.

    Never blocks on a FIFO and never reads more than max_bytes + 1 bytes.

    Args:
        what: names the file in messages (the path, or "the runtime cache").

    Raises:
        FileRefused: missing, not a regular file (named: "a FIFO", "a character
            device", ...), larger than max_bytes, or unreadable; one sentence.
    """
    path = Path(path)
    try:
        kind = special_kind(os.stat(path).st_mode)
        if kind is not None:
            raise _special(what, kind)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileRefused:
        raise
    except (FileNotFoundError, NotADirectoryError):
        raise FileRefused(what, "not found", "check the path", "missing") from None
    except OSError as e:
        raise _unreadable(what, e) from None
    try:
        info = os.fstat(fd)
        kind = special_kind(info.st_mode)  # swapped for a FIFO since the stat
        if kind is not None:
            raise _special(what, kind)
        if info.st_size > max_bytes:  # said without reading it
            raise _too_large(what, max_bytes)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(READ_CHUNK_BYTES, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except FileRefused:
        raise
    except OSError as e:
        raise _unreadable(what, e) from None
    finally:
        os.close(fd)
    if total > max_bytes:  # grown since the fstat
        raise _too_large(what, max_bytes)
    return b"".join(chunks)


def _too_large(what: str, max_bytes: int) -> FileRefused:
    return FileRefused(
        what, f"is over the limit of {max_bytes:,} bytes", "give a smaller file", "too_large"
    )


def _special(what: str, kind: str) -> FileRefused:
    return FileRefused(what, f"is not a regular file ({kind})", "give a file", "special")


def _unreadable(what: str, e: OSError) -> FileRefused:
    detail = f"cannot be read ({e.strerror or e})"
    return FileRefused(what, detail, "check its permissions", "unreadable")
