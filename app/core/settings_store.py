"""The one door to QSettings: every remembered preference (window geometry, the
prompt and settings, servers, folders, the compute preference) lives in the data
folder's settings.ini, opened here and nowhere else."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from engine.paths import data_dir

SETTINGS_FILE = "settings.ini"


def store() -> QSettings:
    """The settings file (INI format), opened afresh: it follows LOGITSCOPE_DATA_DIR."""
    return QSettings(str(data_dir() / SETTINGS_FILE), QSettings.IniFormat)


def value(key: str, default=None):
    """One remembered value, or `default` when there is none."""
    return store().value(key, default)


def set_value(key: str, new) -> None:
    """Remember one value now (written to disk before returning)."""
    s = store()
    s.setValue(key, new)
    s.sync()
