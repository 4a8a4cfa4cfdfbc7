"""What the playground remembers between sessions: window geometry and state,
splitter positions, the side panel, the prompt, the sampling settings and the
model. Stored in the data folder's settings.ini (QSettings, INI format)."""

from __future__ import annotations

import json

from PySide6.QtCore import QByteArray, QSettings

from app.core import settings_store
from engine.errors import LogitscopeError
from engine.run.settings import SamplingSettings

DEFAULT_PROMPT = "What is the capital of France?"


def open_store() -> QSettings:
    """The settings file, through the one settings store."""
    return settings_store.store()


def restore(store: QSettings, prompt, controls, picker, window, split) -> tuple[bool, bool]:
    """Apply what was saved to these widgets; returns (a window geometry was restored,
    the side panel is shown)."""
    prompt.setPlainText(store.value("prompt", DEFAULT_PROMPT))
    raw = store.value("settings")
    if raw:
        try:
            settings = SamplingSettings.from_dict(json.loads(raw)).validate()
            controls.apply(settings, store.value("seed_locked", "false") == "true")
        except (
            ValueError,
            TypeError,
            AttributeError,
            OverflowError,
            RecursionError,
            LogitscopeError,
        ) as e:
            deep = isinstance(e, RecursionError)
            why = "nested too deeply" if deep else "not the sampling settings the app saves"
            settings_store.say_damaged("settings", why)  # and the app starts with the defaults
    model = store.value("model")
    if model:
        picker.refresh(select=model)
    geometry = store.value("window/geometry")
    restored = isinstance(geometry, QByteArray) and window.restoreGeometry(geometry)
    splitter = store.value("window/splitter")
    if isinstance(splitter, QByteArray):
        split.restoreState(splitter)
    return bool(restored), store.value("window/side_visible", "true") != "false"


def save(store: QSettings, prompt, controls, model_path, window, split, side_visible) -> None:
    """Remember the prompt, settings, model, geometry, splitter and side panel."""
    store.setValue("prompt", prompt.toPlainText())
    settings = controls.settings(draw_seed=False)
    store.setValue("settings", json.dumps(settings.to_dict()))
    store.setValue("seed_locked", "true" if controls.seed_lock.isChecked() else "false")
    if model_path:
        store.setValue("model", model_path)
    store.setValue("window/geometry", window.saveGeometry())
    store.setValue("window/splitter", split.saveState())
    store.setValue("window/side_visible", "true" if side_visible else "false")
    store.sync()


def drop_oldest() -> bool:
    """Whether a full context drops the conversation's oldest turns without asking."""
    return settings_store.value("conversation/drop_oldest", "false") == "true"


def remember_drop_oldest(on: bool) -> None:
    settings_store.set_value("conversation/drop_oldest", "true" if on else "false")
