"""Reading the small settings files Logitscope keeps, whatever state they are in.

A damaged file (not text, not JSON, too large, nested too deeply, wrong types) never
stops a command or the window: the reader gets the defaults, the damage is said in
words once per process (one `logitscope: warning:` line on stderr, and to every
listener, the window's status bar), and the file is kept as it is. Only when a fresh
file must be written is the damaged one renamed aside to `<name>.damaged`, never
overwritten. What each field must hold is its owner's business (engine/cost/costs.py,
app/core/servers.py); this module knows files, not fields. Qt-free and MLX-free.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from engine.store.bounded_json import FileRefused, read_bounded

MAX_BYTES = 1 << 20  # a settings file is a few KB; 1 MB is far beyond any real one
DAMAGED_SUFFIX = ".damaged"

_said: list[str] = []
_listeners: list[Callable[[str], None]] = []


class DamagedFile(ValueError):
    """A settings file that cannot be used as it is; the message says why in words."""


def report(message: str) -> None:
    """Say `message` once per process: on stderr and to every listener.

    Args:
        message: one sentence naming the file, what is wrong and what was done.
    """
    if message in _said:
        return
    _said.append(message)
    print(f"logitscope: warning: {message}", file=sys.stderr, flush=True)
    for listener in list(_listeners):
        listener(message)


def reported() -> list[str]:
    """Everything said so far in this process, oldest first."""
    return list(_said)


def listen(callback: Callable[[str], None]) -> Callable[[], None]:
    """Call `callback(message)` for each damage said from now on; returns a function
    that stops it (the window's cleanup)."""
    _listeners.append(callback)

    def stop() -> None:
        if callback in _listeners:
            _listeners.remove(callback)

    return stop


def read_text(path: Path, limit: int = MAX_BYTES) -> str | None:
    """The text of a settings file; None when there is none.

    Raises:
        DamagedFile: it is not a regular file, cannot be read, is larger than `limit`
            or is not UTF-8 text.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise DamagedFile(f"it cannot be read ({e.strerror or e})") from e
    if not stat.S_ISREG(info.st_mode):  # a folder or a FIFO: reading could fail or hang
        raise DamagedFile("it is not a regular file")
    if info.st_size > limit:
        raise DamagedFile(f"it is {_size(info.st_size)}, more than a settings file can be")
    try:  # opened without waiting: a FIFO put there since the stat is refused, not awaited
        data = read_bounded(path, limit, str(path))
    except FileRefused as e:
        if e.reason == "missing":  # removed since the stat
            return None
        if e.reason == "special":
            raise DamagedFile("it is not a regular file") from e
        if e.reason == "too_large":  # grown since the stat
            raise DamagedFile(
                f"it is more than {_size(limit)}, more than a settings file can be"
            ) from e
        raise DamagedFile(f"it {e.detail}") from e
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DamagedFile(f"it is not text (not UTF-8 at byte {e.start})") from e


def parse_json(text: str) -> object:
    """`text` as JSON, with every way it can fail turned into DamagedFile.

    Raises:
        DamagedFile: not valid JSON, or nested too deeply for Python to read.
    """
    try:
        return json.loads(text)  # NaN and Infinity parse: each field's check refuses them
    except RecursionError as e:
        raise DamagedFile("it is nested too deeply to read") from e
    except json.JSONDecodeError as e:
        raise DamagedFile(f"it is not valid JSON ({e.msg}, line {e.lineno})") from e
    except ValueError as e:  # an integer of more than 4,300 digits
        raise DamagedFile(f"it is not valid JSON ({e})") from e


def read_json(path: Path) -> object:
    """The JSON in a settings file; None when there is none.

    Raises:
        DamagedFile: see read_text and parse_json.
    """
    text = read_text(path)
    return None if text is None else parse_json(text)


def set_aside(path: Path) -> Path:
    """Rename `path` to a free `<name>.damaged` name beside it (never over an earlier one).

    Returns:
        The new path.

    Raises:
        OSError: it could not be renamed (then nothing fresh may be written over it).
    """
    target = path.with_name(path.name + DAMAGED_SUFFIX)
    n = 2
    while target.exists() or target.is_symlink():
        target = path.with_name(f"{path.name}{DAMAGED_SUFFIX}.{n}")
        n += 1
    os.replace(path, target)
    return target


def number(value, what: str, most: float) -> float:
    """`value` as a float from 0 to `most`; ints of any size are compared exactly.

    Raises:
        ValueError: a bool, not a number, not finite, negative or above `most` (in words).
    """
    given = value
    if isinstance(value, str):  # the Cost dialog's cells
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"{what} ({_show(given)}) is not a number") from None
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and isinstance(value, float):
        ok = math.isfinite(value)
    if not ok or not 0 <= value <= most:
        raise ValueError(f"{what} ({_show(given)}) is not a number from 0 to {most:,.0f}")
    return float(value)


def _show(value) -> str:
    """A value in a message, cut short: a 400-digit price must not fill the screen."""
    if isinstance(value, str):
        text = repr(value[:24]) + ("…" if len(value) > 24 else "")
        return text if len(value) <= 24 else f"{text} ({len(value):,} characters)"
    return _short_repr(value)


def _short_repr(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**24:
        try:
            return f"a {len(str(abs(value)))}-digit number"
        except ValueError:  # more digits than Python prints
            return "a number of thousands of digits"
    if isinstance(value, list | dict):
        return f"a JSON {'list' if isinstance(value, list) else 'object'}"
    return repr(value)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"
