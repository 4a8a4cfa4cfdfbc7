"""Live request events, for whoever watches the server (the window's Follow requests).

`add_listener(callback)` subscribes; every callback gets each RequestEvent on the
scheduler's thread, as it happens: "started" (prompt, settings, client), one
"record" per engine record (prefill, token, done), then "ended". A GUI hands them
to its own thread (a Qt signal, a queue); a slow callback slows the server, and a
callback that raises is dropped, never the request. Nothing here knows about Qt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.run.records import Record
from engine.run.settings import SamplingSettings


@dataclass(frozen=True)
class ClientInfo:
    """Who sent a request (never its API key)."""

    address: str  # "host:port"
    user_agent: str
    route: str  # "/v1/chat/completions" or "/v1/completions"


@dataclass(frozen=True)
class RequestEvent:
    """One thing that happened to one request.

    Attributes:
        kind: "started", "record" or "ended".
        request_id: the server's id of the request (the response's id).
        run_id: its run in the journal (None when the history cannot be written).
        prompt: the prompt (text, or chat messages), on "started".
        settings: the sampling settings, on "started".
        client: who sent it, on "started".
        record: the engine record, on "record".
        outcome: on "ended": "done", "cancelled" or "error".
    """

    kind: str
    request_id: str
    run_id: str | None = None
    prompt: object = None
    settings: SamplingSettings | None = None
    client: ClientInfo | None = None
    record: Record | None = None
    outcome: str | None = None
    model: dict = field(default_factory=dict)


_LISTENERS: list[Callable[[RequestEvent], None]] = []
_LOCK = threading.Lock()


def add_listener(callback: Callable[[RequestEvent], None]) -> None:
    """Call `callback(event)` for every request event from now on."""
    with _LOCK:
        _LISTENERS.append(callback)


def remove_listener(callback: Callable[[RequestEvent], None]) -> None:
    """Stop calling `callback` (no error if it was not subscribed)."""
    with _LOCK:
        if callback in _LISTENERS:
            _LISTENERS.remove(callback)


def emit(event: RequestEvent) -> None:
    """Hand `event` to every listener; one that raises is unsubscribed."""
    with _LOCK:
        listeners = list(_LISTENERS)
    for callback in listeners:
        try:
            callback(event)
        except Exception:  # noqa: BLE001 - a watcher's bug must not end a request
            remove_listener(callback)
