"""The model the playground loads at start: the one it remembers, and when that is a
model on a server that does not answer, the last local model (or the default) in
its place, with a notice that names the server.

`fallback_for` and `fallback_notice` are plain functions; `load_on_start` wires
them to the window's bridge for the start-up load only. It also remembers every
local model that loads (settings store, `model/last_local`), which is what a later
start falls back to. A damaged model-preferences file is said at start, in the same
banner (`prefs_notice`): the window starts whatever state that file is in.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer

from app.core import settings_store
from engine.backends.base import is_remote
from engine.models.default_model import DEFAULT_MODEL_NAME

LAST_LOCAL_KEY = "model/last_local"
RETRY_MS = 50  # the bridge's thread is still ending when it reports the failure


def fallback_for(last_local: str | None) -> str | None:
    """The model to load instead of an unreachable server's: the last local model if
    it is still on disk, else None (the default model)."""
    if last_local and not is_remote(last_local) and Path(last_local).exists():
        return last_local
    return None


def fallback_notice(spec: str, kind: str, message: str, fallback: str | None) -> str:
    """'The server at host:port did not answer (…); loaded X instead. …'"""
    host = spec.split("://", 1)[-1].split("/", 1)[0].split("#", 1)[0]
    what = "did not answer" if kind == "server" else "could not give its model"
    name = Path(fallback).name if fallback else DEFAULT_MODEL_NAME
    return (
        f"The server at {host} {what} ({message}); loaded {name} instead. "
        "Choose the server's model in the Model box when it is back."
    )


def prefs_notice() -> str | None:
    """The damage of the model-preferences file in words, for the banner, or None."""
    from engine.errors import LogitscopeError
    from engine.models.model_prefs import damage

    try:
        why = damage()
    except LogitscopeError as e:  # the data folder itself cannot be used
        why = str(e)
    return f"{why[0].upper()}{why[1:]}." if why else None


def remember_local(record) -> None:
    """Remember a local model that loaded: a later start falls back to it."""
    local = record.backend == "mlx" and not is_remote(record.path)
    if local and settings_store.value(LAST_LOCAL_KEY) != record.path:
        settings_store.set_value(LAST_LOCAL_KEY, record.path)


def load_on_start(bridge, spec: str | None, load, show_error) -> None:
    """Load the remembered model `spec` with `load(spec)`; if it is on a server and the
    load fails, load the fallback once `bridge` is free and `show_error` which server
    failed."""
    bridge.model_loaded.connect(remember_local)
    load(spec)
    notice = prefs_notice()
    if notice:
        show_error(notice)
    if not is_remote(spec):
        return
    failure = []

    def on_failed(record) -> None:
        failure.append(record)

    def on_busy(busy: bool) -> None:
        if busy:
            return
        bridge.failed.disconnect(on_failed)
        bridge.busy_changed.disconnect(on_busy)
        if failure and failure[0].kind in ("server", "model"):
            fall_back(failure[0])

    def fall_back(error) -> None:
        if bridge.busy:  # its thread is still ending
            QTimer.singleShot(RETRY_MS, lambda: fall_back(error))
            return
        fallback = fallback_for(settings_store.value(LAST_LOCAL_KEY))
        load(fallback)
        show_error(fallback_notice(spec, error.kind, error.message, fallback))

    bridge.failed.connect(on_failed)
    bridge.busy_changed.connect(on_busy)
