"""Journaling a command-line run (`logitscope generate`) into the history."""

from __future__ import annotations

import sys

from engine.errors import LogitscopeError
from engine.sessions.run_writer import RunWriter


def _warn(message: str) -> None:
    print(f"logitscope: warning: {message}; this run is not in the history", file=sys.stderr)


class RunLogger:
    """Journals a command-line run in a session of its own (a RunWriter); if the
    history cannot be written, says so once (where, and what to do) and goes on."""

    def __init__(self, start: tuple[str, dict] | None):
        from engine.sessions.journal import Journal

        self.journal = None
        if start is not None:
            try:
                self.journal = Journal.create()
            except LogitscopeError as e:
                _warn(str(e))
        self.writer = RunWriter(self.journal, *(start or ("", {})), None, _warn)

    def record(self, record) -> None:
        """Journal one record (see RunWriter.record)."""
        self.writer.record(record)

    def close(self) -> None:
        """Close the session's journal file."""
        if self.journal is not None:
            self.journal.close()
