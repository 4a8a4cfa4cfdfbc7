"""History: the app's view of the journal, without Qt.

What it holds: the sessions on disk (newest first) and the files that could not be
read, which session or run is selected, and whether failed runs are hidden. Every
change goes through a method here, and every method announces what changed; the
History panel (app/history/panel.py) draws from these announcements, and the window
asks this model, not the panel, what is selected (Ctrl+E exports the selection).
Journal writes (rename, star, delete, restore, empty the bin) go through `Journal`,
the one writer of journal lines.
"""

from __future__ import annotations

from pathlib import Path

from app.session.events import Announcer, announces
from engine.errors import LogitscopeError
from engine.sessions.journal import Journal, RunLog, SessionLog, list_sessions
from engine.sessions.session_import import import_json

EVENTS = (
    "listed",  # () the sessions were read again (a run written, renamed, deleted…)
    "selected",  # (session_id | None, run_id | None) the selection changed
    "filter_changed",  # (bool) failed runs hidden or shown
)


def append_meta(session: SessionLog, run_id: str, **changes) -> None:
    """One `meta` entry for a run, through the session's Journal (locks, torn-line guard).

    Raises:
        engine.sessions.journal.JournalError: the history folder cannot be written.
    """
    journal = Journal.open(session.path)
    try:
        journal.meta(run_id, **changes)
    finally:
        journal.close()


# What every History of this process read: path -> ((size, mtime), SessionLog). Each
# window (and the Compare window's picker) has a History; a new one read every journal
# again, which grows with every session kept. SessionLogs are only read once made.
_READ: dict = {}


class History:
    """The journal as History shows it (see the module's docstring)."""

    def __init__(self, hide_failed: bool = False, folder: Path | None = None):
        self.folder = folder  # None: the app's sessions folder
        self.sessions: list[SessionLog] = []
        self.problems: list[str] = []  # "file: why" for each unreadable session file
        self.selection: tuple[str | None, str | None] = (None, None)  # (session_id, run_id)
        self.hide_failed = hide_failed
        self._cache = _READ  # unchanged journals are not read again, by any window
        self.events = Announcer(EVENTS)

    # -- reading -------------------------------------------------------------------------
    @announces
    def refresh(self) -> None:
        """Read the journal again; the selection stays when its session or run still exists."""
        self.sessions, self.problems = list_sessions(self.folder, cache=self._cache)
        self.events.note("listed")
        sid, run_id = self.selection
        session = self.session(sid)
        if session is None or (run_id is not None and session.run(run_id) is None):
            self._select(None, None)

    def session(self, session_id: str | None) -> SessionLog | None:
        return next((s for s in self.sessions if s.session_id == session_id), None)

    def shown_runs(self, session: SessionLog) -> list[RunLog]:
        """A session's runs as listed: not deleted, failed ones only when not hidden."""
        return [r for r in session.runs if not r.deleted and not (r.error and self.hide_failed)]

    def binned(self) -> list[tuple[SessionLog, RunLog]]:
        """The deleted runs (the Bin), with their sessions."""
        return [(s, r) for s in self.sessions for r in s.runs if r.deleted]

    def selected(self) -> tuple[SessionLog | None, RunLog | None]:
        """The selected session and run (run None: a whole session is selected)."""
        sid, run_id = self.selection
        session = self.session(sid)
        run = session.run(run_id) if session is not None and run_id else None
        return session, run

    def find_run(self, run_id: str) -> tuple[SessionLog | None, RunLog | None]:
        for s in self.sessions:
            run = s.run(run_id)
            if run is not None:
                return s, run
        return None, None

    # -- the selection and the filter ------------------------------------------------------
    def _select(self, session_id: str | None, run_id: str | None) -> None:
        if (session_id, run_id) != self.selection:
            self.selection = (session_id, run_id)
            self.events.note("selected", session_id, run_id)

    @announces
    def select(self, session_id: str | None, run_id: str | None = None) -> None:
        """Select a session (run_id None) or one of its runs; unknown ids select nothing."""
        session = self.session(session_id)
        if session is None or (run_id is not None and session.run(run_id) is None):
            session_id = run_id = None
        self._select(session_id, run_id)

    @announces
    def select_run(self, run_id: str) -> bool:
        """Select a run wherever it is; False when no session holds it."""
        session, run = self.find_run(run_id)
        if run is None:
            return False
        self._select(session.session_id, run_id)
        return True

    @announces
    def set_hide_failed(self, hide: bool) -> None:
        if hide != self.hide_failed:
            self.hide_failed = hide
            self.events.note("filter_changed", hide)
            self.events.note("listed")

    # -- changes to the journal ------------------------------------------------------------
    @announces
    def change_run(self, **changes) -> RunLog | None:
        """Write `changes` (name, starred, deleted) for the selected run and read the
        journal again; returns the run as it was, None when no run is selected.

        Raises:
            engine.sessions.journal.JournalError: the history folder cannot be written.
        """
        session, run = self.selected()
        if run is None:
            return None
        append_meta(session, run.run_id, **changes)
        self.refresh()
        self.select_run(run.run_id)
        return run

    @announces
    def empty_bin(self) -> tuple[int, list[str]]:
        """Delete the binned runs for good: (how many, an error line per unwritable file)."""
        doomed: dict[int, tuple[SessionLog, set]] = {}
        for s, r in self.binned():
            doomed.setdefault(id(s), (s, set()))[1].add(r.run_id)
        removed, errors = 0, []
        for s, ids in doomed.values():
            try:
                journal = Journal.open(s.path)
            except (LogitscopeError, OSError) as e:
                errors.append(str(e))
                continue
            try:
                journal.rewrite(lambda e, ids=ids: e.get("run_id") not in ids)
                removed += len(ids)
            except (LogitscopeError, OSError) as e:  # said; the other sessions go on
                errors.append(str(e))
            finally:
                journal.close()
        self.refresh()
        return removed, errors

    @announces
    def import_file(self, path: str):
        """Add an exported JSON session; returns the ImportResult and selects its session.

        Raises:
            ValueError, engine.errors.LogitscopeError: the file is not a session export.
        """
        result = import_json(Path(path))
        self.refresh()
        if result.session is not None:
            self.select(result.session.session_id)
        return result
