"""HistoryPanel: past sessions and runs from the journal; open, rename, star,
delete (to a bin, restorable), export and import them. Opening a run needs no
model. The panel draws the session model's `History` (app/session/history.py): what
is listed, what is selected and the hide-failed filter live there, and every change
goes through its methods (and `Journal`, the one writer of journal lines). The panel
follows the journal's own change events: a run written by the playground, Compare,
the lab or an import is listed as soon as it is written."""

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
from app.session.history import History, append_meta  # noqa: F401 - append_meta: callers
from engine.errors import LogitscopeError
from engine.sessions.export import render
from engine.sessions.journal import RunLog, SessionLog, sessions_dir
from engine.store.atomic import write_atomic

BIN = "__bin__"
HIDE_FAILED_KEY = "history/hide_failed"
COALESCE_MS = 100  # a burst of journal events (an import, four lanes ending) refreshes once


class HistoryPanel(QWidget):
    """Sessions (newest first) with their runs, and a Bin of deleted runs.

    `confirm(title, text) -> bool` asks the user; tests replace it.
    """

    open_run = Signal(object)  # RunLog
    message = Signal(str)  # errors and notices for the window to show

    def __init__(self, history: History | None = None, parent=None):
        super().__init__(parent)
        self.model = history if history is not None else History()
        self.tree = RunTree()
        self.tree.setHeaderLabels(["Run", "Model", "Tokens", "tok/s"])
        self.tree.setRootIsDecorated(True)
        self.tree.setToolTip("Double-click a run to show it again (no model needed)")
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.hide()
        self.hide_failed = QCheckBox("Hide failed runs")
        self.hide_failed.setToolTip("Runs that failed (a typo, a refused connection) are marked ✗")
        self.model.set_hide_failed(settings_store.value(HIDE_FAILED_KEY, "false") == "true")
        self.hide_failed.setChecked(self.model.hide_failed)
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
        self.confirm = self._ask
        self._drawing = False  # the tree is being rebuilt: its selection echoes are ignored
        self._pending = QTimer(self)
        self._pending.setSingleShot(True)
        self._pending.setInterval(COALESCE_MS)
        self._pending.timeout.connect(self.refresh)
        self.model.events.listed.connect(self._draw)
        self.model.events.selected.connect(self._show_selection)
        self.model.events.filter_changed.connect(self.hide_failed.setChecked)
        # Whoever writes the journal, on whatever thread: the slot runs on the GUI thread.
        journal_changes().changed.connect(self._on_journal_changed, Qt.QueuedConnection)
        self.tree.itemDoubleClicked.connect(lambda *_: self._on_open())
        self.tree.currentItemChanged.connect(self._on_current)
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
        self.model.events.listed.disconnect(self._draw)
        self.model.events.selected.disconnect(self._show_selection)
        self.model.events.filter_changed.disconnect(self.hide_failed.setChecked)

    @property
    def sessions(self) -> list[SessionLog]:
        """The sessions listed (the model's)."""
        return self.model.sessions

    def _on_journal_changed(self, event) -> None:
        try:
            ours = Path(event.path).parent.resolve() == Path(sessions_dir()).resolve()
        except (OSError, LogitscopeError):
            ours = False
        if ours and not self._pending.isActive():
            self._pending.start()

    def _on_hide_failed(self, hide: bool) -> None:
        settings_store.set_value(HIDE_FAILED_KEY, "true" if hide else "false")
        self.model.set_hide_failed(hide)

    # -- the tree: drawn from the model ----------------------------------------------------
    def refresh(self) -> None:
        """Read the journal again (the model announces; the tree redraws)."""
        self.model.refresh()

    def _draw(self) -> None:
        scroll = self.tree.verticalScrollBar().value()
        expanded = {
            self.tree.topLevelItem(i).data(0, RUN_ROLE)[0]
            for i in range(self.tree.topLevelItemCount())
            if self.tree.topLevelItem(i).isExpanded()
        }
        self._drawing = True
        try:
            self.tree.clear()
            seen = {}
            for s in self.model.sessions:
                name = session_name(s)
                seen[name] = seen.get(name, 0) + 1  # same minute, same first prompt: numbered
                name = name if seen[name] == 1 else f"{name} ({seen[name]})"
                top = session_item(name, s)
                for r in self.model.shown_runs(s):
                    top.addChild(run_item(s, r))
                self.tree.addTopLevelItem(top)
                top.setExpanded(s.session_id in expanded)
            binned = self.model.binned()
            if binned:
                bin_item = QTreeWidgetItem([f"Bin ({len(binned)} deleted)", "", "", ""])
                bin_item.setData(0, RUN_ROLE, (BIN, None))
                bin_item.setToolTip(
                    0, "Deleted runs: Restore brings one back, Empty bin removes them for good"
                )
                for s, r in binned:
                    bin_item.addChild(run_item(s, r))
                self.tree.addTopLevelItem(bin_item)
            if self.model.sessions and not expanded:
                self.tree.topLevelItem(0).setExpanded(True)
            self._show_selection(*self.model.selection)
        finally:
            self._drawing = False
        self.tree.verticalScrollBar().setValue(scroll)
        problems = self.model.problems
        self.notice.setText("; ".join(f"Skipped unreadable session file {p}" for p in problems))
        self.notice.setVisible(bool(problems))
        self.tree.fit_columns()
        self._update_buttons()

    def _item(self, session_id, run_id) -> QTreeWidgetItem | None:
        """The tree's row for a session (run_id None) or a run (listed or in the Bin)."""
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            if run_id is None and top.data(0, RUN_ROLE)[0] == session_id:
                return top
            for j in range(top.childCount() if run_id is not None else 0):
                if top.child(j).data(0, RUN_ROLE) == (session_id, run_id):
                    return top.child(j)
        return None

    def _show_selection(self, session_id, run_id) -> None:
        item = self._item(session_id, run_id) if session_id is not None else None
        was, self._drawing = self._drawing, True
        try:
            if item is None:
                self.tree.setCurrentItem(None)
            else:
                if item.parent() is not None:
                    item.parent().setExpanded(True)
                self.tree.setCurrentItem(item)
        finally:
            self._drawing = was
        self._update_buttons()

    def _on_current(self, item, _previous) -> None:
        if not self._drawing:
            sid, run_id = item.data(0, RUN_ROLE) if item is not None else (None, None)
            self.model.select(None if sid == BIN else sid, run_id)
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
        return self.model.selected()

    def select_run(self, run_id: str, in_bin: bool = False) -> bool:
        """Select a run (in the Bin: `in_bin`); False when it is not there."""
        session, run = self.model.find_run(run_id)
        if run is None or run.deleted != in_bin:
            return False
        self.model.select(session.session_id, run_id)
        return True

    # -- actions -------------------------------------------------------------------------
    def _change(self, **changes) -> RunLog | None:
        """Write `changes` for the selected run through the model; errors are said."""
        try:
            return self.model.change_run(**changes)
        except LogitscopeError as e:
            self.message.emit(str(e))
            return None

    def _on_open(self) -> None:
        _session, run = self.selected()
        if run is not None and not run.deleted:
            self.open_run.emit(run)

    def rename(self, name: str) -> None:
        self._change(name=name.strip())

    def _on_rename(self) -> None:
        _session, run = self.selected()
        if run is None:
            return
        name, ok = QInputDialog.getText(self, "Rename run", "Name:", text=run.name or run.title)
        if ok:
            self.rename(name)

    def _on_star(self) -> None:
        _session, run = self.selected()
        if run is not None:
            self._change(starred=not run.starred)

    def _on_delete(self) -> None:
        _session, run = self.selected()
        if run is None or run.deleted:
            return
        if not self.confirm(
            "Delete run",
            f"Move “{run.title}” to the Bin?\n\nYou can "
            "restore it from the Bin until you empty it.",
        ):
            return
        if self._change(deleted=True) is not None:
            self.message.emit(f"Moved “{run.title}” to the Bin (Restore brings it back)")

    def _on_restore(self) -> None:
        _session, run = self.selected()
        if run is not None and run.deleted and self._change(deleted=False) is not None:
            self.message.emit(f"Restored “{run.title}”")

    def _on_empty(self) -> None:
        doomed = self.model.binned()
        if not doomed or not self.confirm(
            "Empty the bin", f"Delete {len(doomed)} run(s) for good? This cannot be undone."
        ):
            return
        removed, errors = self.model.empty_bin()
        for e in errors:
            self.message.emit(e)
        self.message.emit(f"Deleted {removed} run(s) for good")

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
            result = self.model.import_file(path)
        except (ValueError, LogitscopeError) as e:
            self.message.emit(str(e))
            return None
        self.message.emit(result.summary()[:1].upper() + result.summary()[1:])
        return result.session

    def _on_import(self) -> None:
        path = ask_import_path(self)
        if path:
            self.import_from(path)
