"""The history's tree: a session's name, a run's row, and column widths that keep
the Run column readable at every panel width."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem

from engine.models.display_name import model_name
from engine.sessions.journal import RunLog, SessionLog

RUN_ROLE = Qt.UserRole + 1
MODEL_SHARE = 0.25  # the Model column never takes more than this share of the width
RUN_MIN = 120  # px: the Run column (the session's and runs' names) is never narrower
HEADER_PAD, CELL_PAD = 20, 12  # px around a header label (sort arrow room) and a cell's text


def session_name(s: SessionLog, now: float | None = None) -> str:
    """'Tour · 10:59 · What is the capital of France?': its title when it has one (a
    lane of its own: "Tour", "Server", "Confidence"), first, where a narrow column still
    shows it; when it started (the time alone today, the day too before, the year too
    when not this one) and what it began with, so two sessions never read alike."""
    t, today = time.localtime(s.started), time.localtime(now)
    clock = time.strftime("%H:%M", t)
    if t[:3] == today[:3]:
        when = clock
    else:
        year = "" if t.tm_year == today.tm_year else f" {t.tm_year}"
        when = f"{t.tm_mday} {time.strftime('%b', t)}{year} {clock}"
    runs = s.visible_runs
    first = " ".join(runs[0].prompt.split())[:60] if runs else ""
    lane = f"{s.title} · " if s.title else ""
    return f"{lane}{when} · {first or 'no runs yet'}"


class RunTree(QTreeWidget):
    """The history's tree: the Run column keeps its room at every width; the model's
    name takes at most MODEL_SHARE of it (elided, whole in the tooltip); the numbers fit."""

    def __init__(self):
        super().__init__()
        header = self.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(36)
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        for col in (1, 2, 3):  # sized by fit_columns: Qt's ResizeToContents starves column 0
            header.setSectionResizeMode(col, QHeaderView.Interactive)
        self.setTextElideMode(Qt.ElideRight)
        self.itemExpanded.connect(lambda _item: self.fit_columns())
        self.itemCollapsed.connect(lambda _item: self.fit_columns())

    def _wanted(self, col: int) -> int:
        """The column's content width, header text included (children of collapsed
        sessions counted too: expanding one never re-flows the columns)."""
        label = self.headerItem().text(col)
        widest = self.header().fontMetrics().horizontalAdvance(label) + HEADER_PAD
        fm = self.fontMetrics()
        for i in range(self.topLevelItemCount()):
            top = self.topLevelItem(i)
            widest = max(widest, fm.horizontalAdvance(top.text(col)) + CELL_PAD)
            for j in range(top.childCount()):
                widest = max(widest, fm.horizontalAdvance(top.child(j).text(col)) + CELL_PAD)
        return widest

    def fit_columns(self) -> None:
        """Numbers fit exactly; the model name gets what is left beside RUN_MIN, at most
        MODEL_SHARE of the width; the Run column stretches over the rest."""
        width = self.viewport().width()
        header = self.header()
        numbers = 0
        for col in (2, 3):
            header.resizeSection(col, self._wanted(col))
            numbers += header.sectionSize(col)
        room = max(width - numbers - RUN_MIN, header.minimumSectionSize())
        header.resizeSection(1, min(self._wanted(1), int(width * MODEL_SHARE), room))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit_columns()


FAILED_MARK = "✗ failed · "
BRANCH_MARK = "↳ "  # a run that continued another from a step (a branch or a sample)
FAILED_COLOR = "#c0392b"  # readable on light and dark rows (>= 4.5:1 on white)


def branch_text(branch: dict | None) -> str:
    """' · branch of run X at step K (…)' for a branch run's tooltip; '' otherwise."""
    if not branch:
        return ""
    how = "a chosen token" if branch.get("kind") == "forced" else "sampled"
    return f" · branch of run {branch.get('parent')} at step {branch.get('step')} ({how})"


def session_item(name: str, s: SessionLog) -> QTreeWidgetItem:
    """A session's row: its name, and in Tokens the tokens of its runs (not the count of
    runs, which the tooltip gives)."""
    runs = s.visible_runs
    tokens = sum(sum(not t.eos for t in r.tokens) for r in runs)
    item = QTreeWidgetItem([name, "", str(tokens), ""])
    item.setData(0, RUN_ROLE, (s.session_id, None))
    n = len(runs)
    item.setToolTip(0, f"{s.session_id} · {n} run{'s' if n != 1 else ''}\n{s.path}")
    item.setToolTip(2, f"{tokens} tokens generated in {n} run{'s' if n != 1 else ''}")
    return item


def run_item(session: SessionLog, r: RunLog) -> QTreeWidgetItem:
    """One run's row: time, lane (for comparison runs), star and the prompt's first words."""
    d = r.done
    when = time.strftime("%H:%M", time.localtime(r.started))
    lane = ""
    if r.comparison:
        lane = f"[lane {chr(ord('A') + int(r.comparison.get('lane', 0)) % 26)}] "
    elif r.conversation and r.conversation.get("turn"):
        lane = f"[turn {int(r.conversation['turn']) + 1}] "
    tps = d.decode_tps if d else None
    failed = FAILED_MARK if r.error else ""
    branch = BRANCH_MARK if r.branch else ""
    item = QTreeWidgetItem(
        [
            f"{when}  {lane}{failed}{branch}{'★ ' if r.starred else ''}{r.title}",
            model_name(r.model) if r.model else ("—" if r.error else "?"),
            str(sum(not t.eos for t in r.tokens)),
            f"{tps:.1f}" if tps is not None else ("failed" if r.error else "—"),
        ]
    )
    why = f"\nFailed: {r.error.message}" if r.error else ""
    item.setToolTip(0, f"{r.run_id}{branch_text(r.branch)}\n{r.prompt[:300]}{why}")
    if r.error:
        for col in range(4):
            item.setForeground(col, QColor(FAILED_COLOR))
        for col in (2, 3):
            item.setToolTip(col, f"Failed: {r.error.message}")
    m = r.model or {}
    item.setToolTip(1, "\n".join(x for x in (m.get("name", ""), m.get("path", "")) if x))
    item.setData(0, RUN_ROLE, (session.session_id, r.run_id))
    return item
