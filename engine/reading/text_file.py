"""A text file to read through the model: checked once, for the CLI and the window.

A file that cannot be read, is a folder or a special file (a FIFO, a device: named, never
waited on or read without end), is over MAX_FILE_BYTES, holds a NUL byte in its
first SNIFF_BYTES (binary), or is not UTF-8 is refused with one sentence that says what
to do. Plain Python: no MLX, no Qt.
"""

from __future__ import annotations

from pathlib import Path

from engine.display.units import binary_size
from engine.errors import SettingsError
from engine.store.bounded_json import FileRefused, read_bounded

MAX_FILE_BYTES = 20 * 2**20  # a larger text is refused: split it
SNIFF_BYTES = 8192  # a NUL byte in the first 8 KiB: a binary file


def read_text_file(path: Path, label: str | None = None) -> str:
    """The file's text (UTF-8, a BOM dropped); `label` names it in messages (the path).

    Raises:
        SettingsError: not found, a folder, unreadable, too large, binary or not UTF-8.
    """
    label = str(path) if label is None else label
    try:
        data = read_bounded(path, MAX_FILE_BYTES, label)  # a FIFO or a device: never waited on
    except FileRefused as e:
        if e.reason == "missing":
            raise SettingsError(f"{label}: not found; give a text file") from None
        if e.reason == "too_large":
            raise SettingsError(
                f"{label} is over {binary_size(MAX_FILE_BYTES)}: split it"
            ) from None
        if e.reason == "special" and path.is_dir():
            raise SettingsError(f"{label}: a folder; give a text file") from None
        raise SettingsError(f"{label} {e.detail}: give a text file") from None
    if b"\x00" in data[:SNIFF_BYTES]:
        raise SettingsError(f"{label} is a binary file, not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SettingsError(
            f"{label} is not UTF-8 text (byte {e.start}): save it as UTF-8"
        ) from None
