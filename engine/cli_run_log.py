"""Journaling a command-line run (`logitscope generate`) into the history."""

from __future__ import annotations

import sys


class RunLogger:
    """Journals a command-line run; if the history cannot be written, says so once
    (where, and what to do) and lets the run go on."""

    def __init__(self, start: tuple[str, dict] | None):
        from engine.sessions.journal import Journal, JournalError

        self.journal = self.run_id = None
        if start is None:
            return
        try:
            self.journal = Journal.create()
            self.run_id = self.journal.start_run(*start, None)
        except JournalError as e:
            self._warn(e)

    def record(self, record) -> None:
        from engine.sessions.journal import JournalError

        if self.journal is None or record.type == "progress":
            return
        try:
            self.journal.record(self.run_id, record)
        except JournalError as e:
            self._warn(e)

    def _warn(self, e) -> None:
        print(f"logitscope: warning: {e}; this run is not in the history", file=sys.stderr)
        if self.journal is not None:
            self.journal.close()
        self.journal = None

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
