"""What the playground remembers between sessions: window geometry and state,
splitter positions, the side panel, the prompt, the sampling settings and the
model. Stored in the data folder's settings.ini (QSettings, INI format)."""

from __future__ import annotations

import json

from PySide6.QtCore import QByteArray, QSettings

from app import settings_store
from engine.settings import SamplingSettings

DEFAULT_PROMPT = "What is the capital of France?"


def open_store() -> QSettings:
    """The settings file, through the one settings store."""
    return settings_store.store()


def restore(win) -> bool:
    """Apply what was saved; returns True if a window geometry was restored."""
    store = win.store
    win.prompt.setPlainText(store.value("prompt", DEFAULT_PROMPT))
    raw = store.value("settings")
    if raw:
        try:
            settings = SamplingSettings.from_dict(json.loads(raw))
            win.controls.apply(settings, store.value("seed_locked", "false") == "true")
        except (ValueError, TypeError):
            pass  # an unreadable settings file must not stop the app
    model = store.value("model")
    if model:
        win.picker.refresh(select=model)
    geometry = store.value("window/geometry")
    restored = isinstance(geometry, QByteArray) and win.restoreGeometry(geometry)
    splitter = store.value("window/splitter")
    if isinstance(splitter, QByteArray):
        win.split.restoreState(splitter)
    if store.value("window/side_visible", "true") == "false":
        win.toggle_side_panel(False)
    return bool(restored)


def save(win) -> None:
    store = win.store
    store.setValue("prompt", win.prompt.toPlainText())
    settings = win.controls.settings(draw_seed=False)
    store.setValue("settings", json.dumps(settings.to_dict()))
    store.setValue("seed_locked", "true" if win.controls.seed_lock.isChecked() else "false")
    if win.model_record:
        store.setValue("model", win.model_record.path)
    store.setValue("window/geometry", win.saveGeometry())
    store.setValue("window/splitter", win.split.saveState())
    store.setValue("window/side_visible", "true" if win.side_tabs.isVisible() else "false")
    store.sync()


def drop_oldest() -> bool:
    """Whether a full context drops the conversation's oldest turns without asking."""
    return settings_store.value("conversation/drop_oldest", "false") == "true"


def remember_drop_oldest(on: bool) -> None:
    settings_store.set_value("conversation/drop_oldest", "true" if on else "false")
