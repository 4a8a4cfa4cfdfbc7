"""The journal's change events, on the GUI thread.

`engine.sessions.journal` calls its listeners on whatever thread wrote (the
playground's or Compare's bridge thread, an import, the lab). `journal_changes()`
is one QObject, made on the GUI thread, whose `changed` signal carries each
`JournalEvent`; connect it with Qt.QueuedConnection and the slot runs on the GUI
thread whoever wrote.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from engine.sessions import journal


class JournalChanges(QObject):
    changed = Signal(object)  # engine.sessions.journal.JournalEvent


_INSTANCE: JournalChanges | None = None


def journal_changes() -> JournalChanges:
    """The one relay of journal events (made, and subscribed, at the first call)."""
    global _INSTANCE
    if _INSTANCE is None:
        _INSTANCE = JournalChanges()
        journal.add_listener(_INSTANCE.changed.emit)
    return _INSTANCE
