"""What the journal tells whoever shows the history: after each write that changes
what the history lists (a session or run started, a run ended, a meta change, an
import, a rewrite) every listener gets a `JournalEvent`, on the thread that wrote.
Per-token records notify nobody. Nothing here knows about Qt."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class JournalEvent:
    """What a Journal just wrote.

    Attributes:
        path: the journal file.
        session_id: its session.
        what: session | run | ended | meta | import | rewrite.
        run_ids: the runs concerned (empty for session and rewrite).
    """

    path: Path
    session_id: str
    what: str
    run_ids: tuple[str, ...] = ()


_LISTENERS: list[Callable[[JournalEvent], None]] = []
_LISTENERS_GUARD = threading.Lock()


def add_listener(callback: Callable[[JournalEvent], None]) -> None:
    """Call `callback(event)` after every listed change, on the writing thread.

    A callback already added is not added twice; one that raises is ignored.

    Args:
        callback: takes a JournalEvent.
    """
    with _LISTENERS_GUARD:
        if callback not in _LISTENERS:
            _LISTENERS.append(callback)


def remove_listener(callback: Callable[[JournalEvent], None]) -> None:
    """Stop calling `callback` (nothing happens if it was not added).

    Args:
        callback: a callback given to `add_listener`.
    """
    with _LISTENERS_GUARD:
        if callback in _LISTENERS:
            _LISTENERS.remove(callback)


def _notify(event: JournalEvent) -> None:
    with _LISTENERS_GUARD:
        listeners = list(_LISTENERS)
    for callback in listeners:
        with contextlib.suppress(Exception):  # a broken view must never stop the writer
            callback(event)
