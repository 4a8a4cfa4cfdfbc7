"""HistoryPanel: past sessions and runs from the journal; open, rename, star,
delete, export and import them. Opening a run needs no model."""

from __future__ import annotations

import json
import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QInputDialog,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.export import FORMATS, import_json, render
from engine.journal import RunLog, SessionLog, list_sessions

RUN_ROLE = Qt.UserRole + 1
FILTERS = {"html": "HTML report (*.html)", "json": "JSON, everything (*.json)",
           "jsonl": "JSON Lines (*.jsonl)", "csv": "CSV, one row per token (*.csv)",
           "md": "Markdown transcript (*.md)"}  # fmt: skip


def append_meta(session: SessionLog, run_id: str, **changes) -> None:
    """One `meta` line at the end of the run's session journal."""
    line = json.dumps({"kind": "meta", "run_id": run_id, **changes}, ensure_ascii=False)
    with open(session.path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


class HistoryPanel(QWidget):
    open_run = Signal(object)  # RunLog
    message = Signal(str)  # errors and notices for the window to show

    def __init__(self, parent=None):
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Run", "Model", "Tokens", "tok/s"])
        self.tree.setRootIsDecorated(True)
        self.tree.setColumnWidth(0, 140)
        self.tree.setColumnWidth(1, 70)
        self.tree.setColumnWidth(2, 44)
        self.tree.setToolTip("Double-click a run to show it again (no model needed)")
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.hide()
        buttons = QGridLayout()  # two rows: six buttons do not fit one narrow row
        self.buttons = {}
        for key, label, tip in (
            ("open", "Open", "Show this run's tokens and charts"),
            ("rename", "Rename", "Give this run a name"),
            ("star", "★", "Star or unstar"),
            ("delete", "Delete", "Hide this run from history and exports"),
            ("export", "Export…", "Export the run, or the session when one is selected"),
            ("import", "Import…", "Add an exported JSON session to the history"),
        ):
            b = QPushButton(label)
            b.setToolTip(tip)
            buttons.addWidget(b, len(self.buttons) // 3, len(self.buttons) % 3)
            self.buttons[key] = b
        layout = QVBoxLayout(self)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.notice)
        layout.addLayout(buttons)
        self.sessions: list[SessionLog] = []
        self._cache: dict = {}  # unchanged journals are not re-read on refresh
        self.tree.itemDoubleClicked.connect(lambda *_: self._on_open())
        self.buttons["open"].clicked.connect(self._on_open)
        self.buttons["rename"].clicked.connect(self._on_rename)
        self.buttons["star"].clicked.connect(self._on_star)
        self.buttons["delete"].clicked.connect(self._on_delete)
        self.buttons["export"].clicked.connect(self._on_export)
        self.buttons["import"].clicked.connect(self._on_import)
        self.refresh()

    def refresh(self) -> None:
        self.sessions, problems = list_sessions(cache=self._cache)
        self.tree.clear()
        for s in self.sessions:
            top = QTreeWidgetItem([time.strftime("%Y-%m-%d %H:%M", time.localtime(s.started)),
                                   "", str(len(s.visible_runs)), ""])  # fmt: skip
            top.setData(0, RUN_ROLE, (s.session_id, None))
            for r in s.visible_runs:
                d = r.done
                child = QTreeWidgetItem([
                    ("★ " if r.starred else "") + r.title,
                    (r.model or {}).get("name", "?"),
                    str(len(r.tokens)),
                    f"{d.decode_tps:.1f}" if d else ("error" if r.error else "—"),
                ])  # fmt: skip
                child.setToolTip(0, f"{r.run_id}\n{r.prompt[:300]}")
                child.setData(0, RUN_ROLE, (s.session_id, r.run_id))
                top.addChild(child)
            self.tree.addTopLevelItem(top)
        if self.sessions:
            self.tree.topLevelItem(0).setExpanded(True)
        text = "; ".join(f"Skipped unreadable session file {p}" for p in problems)
        self.notice.setText(text)
        self.notice.setVisible(bool(problems))

    def selected(self) -> tuple[SessionLog | None, RunLog | None]:
        item = self.tree.currentItem()
        if item is None:
            return None, None
        sid, run_id = item.data(0, RUN_ROLE)
        session = next((s for s in self.sessions if s.session_id == sid), None)
        run = session.run(run_id) if session and run_id else None
        return session, run

    def select_run(self, run_id: str) -> bool:
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            for j in range(top.childCount()):
                if top.child(j).data(0, RUN_ROLE)[1] == run_id:
                    self.tree.setCurrentItem(top.child(j))
                    return True
        return False

    def _on_open(self) -> None:
        _session, run = self.selected()
        if run is not None:
            self.open_run.emit(run)

    def rename(self, name: str) -> None:
        session, run = self.selected()
        if run is not None:
            append_meta(session, run.run_id, name=name.strip())
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
        if run is not None:
            append_meta(session, run.run_id, starred=not run.starred)
            self._refresh_keep(run.run_id)

    def _on_delete(self) -> None:
        session, run = self.selected()
        if run is not None:
            append_meta(session, run.run_id, deleted=True)
            self.refresh()

    def _refresh_keep(self, run_id: str) -> None:
        self.refresh()
        self.select_run(run_id)

    def export_to(self, path: str, fmt: str) -> None:
        """Export the selected run (or the whole selected session) to `path`."""
        session, run = self.selected()
        if session is None:
            self.message.emit("Select a run or a session to export first.")
            return
        try:
            Path(path).write_text(render(fmt, session, [run] if run else None), encoding="utf-8")
        except OSError as e:
            self.message.emit(f"Could not write {path}: {e.strerror}")
            return
        self.message.emit(f"Exported to {path}")

    def _on_export(self) -> None:
        if self.selected()[0] is None:
            self.message.emit("Select a run or a session to export first.")
            return
        filters = ";;".join(FILTERS[f] for f in FORMATS)
        path, chosen = QFileDialog.getSaveFileName(self, "Export", "", filters)
        if path:
            fmt = next(f for f in FORMATS if FILTERS[f] == chosen) if chosen else "json"
            if not path.endswith("." + fmt):
                path += "." + fmt
            self.export_to(path, fmt)

    def import_from(self, path: str) -> SessionLog | None:
        try:
            session = import_json(Path(path))
        except ValueError as e:
            self.message.emit(str(e))
            return None
        self.refresh()
        self.message.emit(f"Imported {len(session.visible_runs)} run(s) from {path}")
        return session

    def _on_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import", "", FILTERS["json"])
        if path:
            self.import_from(path)
