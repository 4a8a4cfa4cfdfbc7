"""The one door to QSettings: every remembered preference (window geometry, the
prompt and settings, servers, folders, the compute preference) lives in the data
folder's settings.ini, opened here and nowhere else.

Qt reads a damaged INI file without a word and rewrites it at exit, dropping what it
could not parse. So before the first time a process opens it, the file is checked
(UTF-8 text, no control bytes, a sane size and line length, every line a section, a
comment or a `key=value`); a damaged one is moved aside to `settings.ini.damaged`, said
in words (engine/store/settings_files.py), and the app starts from fresh settings.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from engine.store.paths import data_dir
from engine.store.settings_files import DamagedFile, read_text, report, set_aside

SETTINGS_FILE = "settings.ini"
MAX_INI_BYTES = 8 << 20  # generous: the remembered prompt lives here too
MAX_LINE = 2 << 20  # a 2 MB line is a prompt of half a million tokens or more
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # Qt escapes these in values
_checked: set[Path] = set()  # files already checked by this process
BYTES_KEYS = ("window/geometry", "window/splitter", "windows/")  # saveGeometry()/saveState()


class Store(QSettings):
    """QSettings whose `value()` gives only the kind of value the app writes under a
    key (text; a list of texts where the default is a list; bytes for geometry): a hand-
    edited `a, b` (which Qt reads as a list) or a NUL is said and the default used."""

    def value(self, key, defaultValue=None, *args, **kwargs):  # noqa: N803 - Qt's name
        """The stored value, or `defaultValue` when none or of the wrong kind."""
        v = super().value(key, defaultValue, *args, **kwargs)
        why = None if v is None or v is defaultValue else value_damage(key, v, defaultValue)
        if why is None:
            return v
        report(
            f"the settings file {self.fileName()} holds a damaged value for {key} ({why}); "
            "its default is used"
        )
        return defaultValue


def value_damage(key: str, v, default) -> str | None:
    """What is wrong with the value `v` stored under `key`, in words; None if it fits."""
    if key.startswith(BYTES_KEYS):
        return None if isinstance(v, QByteArray) else "not the bytes Qt saved"
    items = v if isinstance(v, list) and isinstance(default, list) else [v]
    if not all(isinstance(i, str) for i in items):
        return "a list where text belongs" if isinstance(v, list) else "not text"
    if any("\x00" in i for i in items):
        return "it holds a NUL character"
    return None


def store() -> QSettings:
    """The settings file (INI format), opened afresh: it follows LOGITSCOPE_DATA_DIR."""
    path = data_dir() / SETTINGS_FILE
    if path not in _checked:
        _checked.add(path)
        check(path)
    return Store(str(path), QSettings.IniFormat)


def say_damaged(key: str, why: str) -> None:
    """Say that the value under `key` could not be used (its reader's check failed)."""
    report(
        f"the settings file {data_dir() / SETTINGS_FILE} holds a damaged value for {key} "
        f"({why}); its default is used"
    )


def check(path: Path) -> str | None:
    """Move a damaged settings file aside before Qt can rewrite it; the damage in words.

    Returns:
        What was said, or None when the file is sound (or absent).
    """
    try:
        why = ini_damage(read_text(path, MAX_INI_BYTES))
    except DamagedFile as e:
        why = str(e)
    if why is None:
        return None
    try:
        kept = set_aside(path)
    except OSError as e:  # it stays; Qt may still rewrite it, but the person was told
        message = f"the settings file {path} is damaged ({why}) and could not be moved aside ({e})"
    else:
        message = (
            f"the settings file {path} is damaged ({why}); it was moved aside to "
            f"{kept.name} and Logitscope starts with fresh settings"
        )
    report(message)
    return message


def ini_damage(text: str | None) -> str | None:
    """What Qt would drop or choke on in an INI file's text, in words; None if sound."""
    if text is None:
        return None
    bad = _CONTROL.search(text)
    if bad:
        n = text.count("\n", 0, bad.start()) + 1
        return f"line {n} holds control characters: this is not a text file"
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE:
            return f"line {n} is {len(line):,} characters long"
        bare = line.strip()
        if bare and not (bare[0] in ";#[" or "=" in bare):  # Qt would drop the line
            return f"line {n} is neither a [section] nor a key=value line"
    return None


def value(key: str, default=None):
    """One remembered value, or `default` when there is none."""
    return store().value(key, default)


def set_value(key: str, new) -> None:
    """Remember one value now (written to disk before returning)."""
    s = store()
    s.setValue(key, new)
    s.sync()
