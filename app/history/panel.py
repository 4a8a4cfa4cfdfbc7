"""HistoryPanel: past sessions and runs from the journal; open, rename, star,
delete (to a bin, restorable), export and import them. Opening a run needs no
model. Every change goes through `Journal`, the one writer of journal lines, and
the panel follows the journal's own change events: a run written by the
playground, Compare, the lab or an import is listed as soon as it is written."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPushButton,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core import settings_store
from app.core.theme import current_scale
from app.dialogs.file_dialogs import ask_export_path, ask_import_path
from app.history.journal_events import journal_changes
from app.history.tree import RUN_ROLE, RunTree, run_item, session_item, session_name
from engine.atomic import write_atomic
from engine.errors import LogitscopeError
from engine.sessions.export import render
from engine.sessions.journal import Journal, RunLog, SessionLog, list_sessions, sessions_dir
from engine.sessions.session_import import import_json

BIN = "__bin__"
HIDE_FAILED_KEY = "history/hide_failed"
COALESCE_MS = 100  # a burst of journal events (an import, four lanes ending) refreshes once


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


class HistoryPanel(QWidget):
    """Sessions (newest first) with their runs, and a Bin of deleted runs.

    `confirm(title, text) -> bool` asks the user; tests replace it.
    """

    open_run = Signal(object)  # RunLog
    message = Signal(str)  # errors and notices for the window to show

    def __init__(self, parent=None):
        super().__init__(parent)
        self.tree = RunTree()
        self.tree.setHeaderLabels(["Run", "Model", "Tokens", "tok/s"])
        self.tree.setRootIsDecorated(True)
        self.tree.setToolTip("Double-click a run to show it again (no model needed)")
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.hide()
        self.hide_failed = QCheckBox("Hide failed runs")
        self.hide_failed.setToolTip("Runs that failed (a typo, a refused connection) are marked ✗")
        self.hide_failed.setChecked(settings_store.value(HIDE_FAILED_KEY, "false") == "true")
        self.hide_failed.toggled.connect(self._on_hide_failed)
        buttons = QGridLayout()  # rows of three: six buttons do not fit one narrow row
        self.buttons = {}
        for key, label, tip in (
            ("open", "Open", "Show this run's tokens and charts (Enter)"),
            ("rename", "Rename", "Give this run a name (F2)"),
            ("star", "★ Star", "Star or unstar this run"),
            ("delete", "Delete", "Move this run to the Bin; restore it from there (Del)"),
            ("export", "Export…", "Export the run, or the whole session when one is selected"),
            ("import", "Import…", "Add an exported JSON session to the history"),
            ("restore", "Restore", "Bring a run back from the Bin"),
            ("empty", "Empty bin…", "Delete the runs in the Bin for good"),
        ):
            b = QPushButton(label)
            b.setToolTip(tip)
            buttons.addWidget(b, len(self.buttons) // 3, len(self.buttons) % 3)
            self.buttons[key] = b
        layout = QVBoxLayout(self)
        layout.addWidget(self.hide_failed)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.notice)
        layout.addLayout(buttons)
        self.sessions: list[SessionLog] = []
        self._cache: dict = {}  # unchanged journals are not re-read on refresh
        self.confirm = self._ask
        self._pending = QTimer(self)
        self._pending.setSingleShot(True)
        self._pending.setInterval(COALESCE_MS)
        self._pending.timeout.connect(self._refresh_keep_selection)
        # Whoever writes the journal, on whatever thread: the slot runs on the GUI thread.
        journal_changes().changed.connect(self._on_journal_changed, Qt.QueuedConnection)
        self.tree.itemDoubleClicked.connect(lambda *_: self._on_open())
        self.tree.currentItemChanged.connect(lambda *_: self._update_buttons())
        for key in self.buttons:
            self.buttons[key].clicked.connect(getattr(self, "_on_" + key))
        self.refresh()

    def _ask(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(
            self, title, text, QMessageBox.Yes | QMessageBox.Cancel, QMessageBox.Cancel
        )
        return answer == QMessageBox.Yes

    def cleanup(self) -> None:
        """Stop following the journal (the panel is going away)."""
        self._pending.stop()
        journal_changes().changed.disconnect(self._on_journal_changed)

    def _on_journal_changed(self, event) -> None:
        try:
            ours = Path(event.path).parent.resolve() == Path(sessions_dir()).resolve()
        except (OSError, LogitscopeError):
            ours = False
        if ours and not self._pending.isActive():
            self._pending.start()

    def _on_hide_failed(self, hide: bool) -> None:
        settings_store.set_value(HIDE_FAILED_KEY, "true" if hide else "false")
        self._refresh_keep_selection()

    def _refresh_keep_selection(self) -> None:
        item = self.tree.currentItem()
        sid, run_id = item.data(0, RUN_ROLE) if item is not None else (None, None)
        scroll = self.tree.verticalScrollBar().value()
        self.refresh()
        if run_id is not None:
            self.select_run(run_id) or self.select_run(run_id, in_bin=True)
        elif sid is not None:
            for i in range(self.tree.topLevelItemCount()):
                if self.tree.topLevelItem(i).data(0, RUN_ROLE)[0] == sid:
                    self.tree.setCurrentItem(self.tree.topLevelItem(i))
        self.tree.verticalScrollBar().setValue(scroll)

    # -- the tree --------------------------------------------------------------------
    def refresh(self) -> None:
        self.sessions, problems = list_sessions(cache=self._cache)
        expanded = {
            self.tree.topLevelItem(i).data(0, RUN_ROLE)[0]
            for i in range(self.tree.topLevelItemCount())
            if self.tree.topLevelItem(i).isExpanded()
        }
        self.tree.clear()
        binned, seen = [], {}
        for s in self.sessions:
            name = session_name(s)
            seen[name] = seen.get(name, 0) + 1  # same minute, same first prompt: numbered
            name = name if seen[name] == 1 else f"{name} ({seen[name]})"
            top = session_item(name, s)
            for r in s.runs:
                if r.deleted:
                    binned.append((s, r))
                elif not (r.error and self.hide_failed.isChecked()):
                    top.addChild(run_item(s, r))
            self.tree.addTopLevelItem(top)
            top.setExpanded(s.session_id in expanded)
        if binned:
            bin_item = QTreeWidgetItem([f"Bin ({len(binned)} deleted)", "", "", ""])
            bin_item.setData(0, RUN_ROLE, (BIN, None))
            bin_item.setToolTip(
                0, "Deleted runs: Restore brings one back, Empty bin removes them for good"
            )
            for s, r in binned:
                bin_item.addChild(run_item(s, r))
            self.tree.addTopLevelItem(bin_item)
        if self.sessions and not expanded:
            self.tree.topLevelItem(0).setExpanded(True)
        text = "; ".join(f"Skipped unreadable session file {p}" for p in problems)
        self.notice.setText(text)
        self.notice.setVisible(bool(problems))
        self.tree.fit_columns()
        self._update_buttons()

    def _update_buttons(self) -> None:
        session, run = self.selected()
        in_bin = run is not None and run.deleted
        for key in ("open", "rename", "star", "delete"):
            self.buttons[key].setEnabled(run is not None and not in_bin)
        self.buttons["export"].setEnabled(session is not None and not in_bin)
        self.buttons["restore"].setEnabled(in_bin)
        self.buttons["empty"].setEnabled(any(r.deleted for s in self.sessions for r in s.runs))

    def selected(self) -> tuple[SessionLog | None, RunLog | None]:
        item = self.tree.currentItem()
        if item is None:
            return None, None
        sid, run_id = item.data(0, RUN_ROLE)
        session = next((s for s in self.sessions if s.session_id == sid), None)
        run = session.run(run_id) if session and run_id else None
        return session, run

    def select_run(self, run_id: str, in_bin: bool = False) -> bool:
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            if (top.data(0, RUN_ROLE)[0] == BIN) != in_bin:
                continue
            for j in range(top.childCount()):
                if top.child(j).data(0, RUN_ROLE)[1] == run_id:
                    top.setExpanded(True)
                    self.tree.setCurrentItem(top.child(j))
                    return True
        return False

    # -- actions -------------------------------------------------------------------------
    def _meta(self, session: SessionLog, run_id: str, **changes) -> bool:
        try:
            append_meta(session, run_id, **changes)
        except LogitscopeError as e:
            self.message.emit(str(e))
            return False
        return True

    def _on_open(self) -> None:
        _session, run = self.selected()
        if run is not None and not run.deleted:
            self.open_run.emit(run)

    def rename(self, name: str) -> None:
        session, run = self.selected()
        if run is not None and self._meta(session, run.run_id, name=name.strip()):
            self._refresh_keep(run.run_id)

    def _on_rename(self) -> None:
        _session, run = self.selected()
        if run is None:
            return
        name, ok = QInputDialog.getText(self, "Rename run", "Name:", text=run.name or run.title)
        if ok:
            self.rename(name)

    def _on_star(self) -> None:
        session, run = self.selected()
        if run is not None and self._meta(session, run.run_id, starred=not run.starred):
            self._refresh_keep(run.run_id)

    def _on_delete(self) -> None:
        session, run = self.selected()
        if run is None or run.deleted:
            return
        if not self.confirm(
            "Delete run",
            f"Move “{run.title}” to the Bin?\n\nYou can "
            "restore it from the Bin until you empty it.",
        ):
            return
        if self._meta(session, run.run_id, deleted=True):
            self.refresh()
            self.message.emit(f"Moved “{run.title}” to the Bin (Restore brings it back)")

    def _on_restore(self) -> None:
        session, run = self.selected()
        if run is not None and run.deleted and self._meta(session, run.run_id, deleted=False):
            self._refresh_keep(run.run_id)
            self.message.emit(f"Restored “{run.title}”")

    def _on_empty(self) -> None:
        doomed = [(s, r) for s in self.sessions for r in s.runs if r.deleted]
        if not doomed or not self.confirm(
            "Empty the bin", f"Delete {len(doomed)} run(s) for good? This cannot be undone."
        ):
            return
        removed = set()
        for s in {id(s): s for s, _r in doomed}.values():
            ids = {r.run_id for r in s.runs if r.deleted}
            journal = Journal.open(s.path)
            try:
                journal.rewrite(lambda e, ids=ids: e.get("run_id") not in ids)
                removed |= ids
            except LogitscopeError as e:
                self.message.emit(str(e))
            finally:
                journal.close()
        self.refresh()
        self.message.emit(f"Deleted {len(removed)} run(s) for good")

    def _refresh_keep(self, run_id: str) -> None:
        self.refresh()
        if not self.select_run(run_id):
            self.select_run(run_id, in_bin=True)

    def export_to(self, path: str, fmt: str, overwrite: bool = True) -> bool:
        """Export the selected run (or the whole selected session) to `path`,
        through a temporary file and a rename."""
        session, run = self.selected()
        if session is None:
            self.message.emit("Select a run or a session to export first.")
            return False
        try:
            write_atomic(
                Path(path), render(fmt, session, [run] if run else None, current_scale()), overwrite
            )
        except (LogitscopeError, FileExistsError) as e:
            self.message.emit(str(e))
            return False
        self.message.emit(f"Exported to {path}")
        return True

    def _on_export(self) -> None:
        self.export_selection()

    def export_selection(self) -> None:
        """Ask where to export the selected run, or the whole selected session."""
        session, run = self.selected()
        if session is None:
            self.message.emit("Select a run or a session to export first.")
            return
        name = (run.run_id if run else session.session_id).replace("/", "-run")
        chosen = ask_export_path(self, f"logitscope-{name}")
        if chosen:
            self.export_to(*chosen)

    def import_from(self, path: str) -> SessionLog | None:
        try:
            result = import_json(Path(path))
        except (ValueError, LogitscopeError) as e:
            self.message.emit(str(e))
            return None
        self.refresh()
        self.message.emit(result.summary()[:1].upper() + result.summary()[1:])
        return result.session

    def _on_import(self) -> None:
        path = ask_import_path(self)
        if path:
            self.import_from(path)
