"""The Confidence tab's table: every question answered, the most confident first by the
chosen signal, wrong answers marked (the error colour and ✗).

The verdict column is a check box ("right"): a person who disputes the rule's verdict
ticks or clears it (`flipped(row, right)`: the row's position in the result); a row a
person re-judged says "overridden". Clicking any other cell of a row asks for that
question's answer (`opened(row)`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from app.core.theme import tint

COLUMNS = ("confidence", "verdict", "question", "greedy answer", "accepted", "line")
CONFIDENCE, VERDICT, QUESTION, ANSWER, ACCEPTED, LINE = range(len(COLUMNS))


def ordered(rows, key: str) -> list[int]:
    """The rows' positions, the most confident by signal `key` first (a row without the
    signal last; ties in the question file's order)."""

    def rank(i: int):
        value = rows[i].signal(key)
        return (value is None, -(value or 0.0), rows[i].line, i)

    return sorted(range(len(rows)), key=rank)


def verdict_text(row) -> str:
    """✓ right / ✗ wrong, and 'overridden' when a person set it."""
    text = "✓ right" if row.correct else "✗ wrong"
    return f"{text} · overridden" if row.overridden else text


class ConfidenceTable(QTableWidget):
    flipped = Signal(int, bool)  # a row's position in the result, the person's verdict
    opened = Signal(int)  # a row's position in the result: open its answer

    def __init__(self, parent=None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.setWordWrap(False)
        head = self.horizontalHeader()
        for c in (CONFIDENCE, VERDICT, LINE):
            head.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        for c in (QUESTION, ANSWER, ACCEPTED):
            head.setSectionResizeMode(c, QHeaderView.Interactive)
        head.setStretchLastSection(False)
        self.setToolTip(
            "Click a question to open its greedy answer in the playground, with its token "
            "charts. Tick or clear 'right' to dispute the rule's verdict: every figure is "
            "recomputed with yours."
        )
        self.order: list[int] = []  # table row -> the row's position in the result
        self._filling = False
        self.itemChanged.connect(self._on_item)
        self.cellClicked.connect(self._on_click)

    def show_rows(self, rows, key: str) -> None:
        """Fill the table with `rows` (QuestionRows), sorted by signal `key`."""
        self._filling = True
        self.order = ordered(rows, key)
        self.setRowCount(len(rows))
        wrong_bg, wrong_fg, _border = tint("error")
        for r, i in enumerate(self.order):
            row = rows[i]
            value = row.signal(key)
            cells = (
                "—" if value is None else f"{value:.3f}",
                verdict_text(row),
                row.question,
                row.answer or "(nothing)",
                " / ".join(row.accepted),
                str(row.line),
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == VERDICT:
                    item.setFlags(Qt.ItemIsEnabled | Qt.ItemIsUserCheckable | Qt.ItemIsSelectable)
                    item.setCheckState(Qt.Checked if row.correct else Qt.Unchecked)
                    item.setToolTip(
                        "Ticked: right. Your verdict replaces the rule's "
                        "(the rule: an accepted answer in the answer's first line)"
                    )
                    if not row.correct:
                        item.setBackground(QBrush(QColor(wrong_bg)))
                elif c in (QUESTION, ANSWER):
                    item.setToolTip(text)
                if not row.correct:
                    item.setForeground(QBrush(QColor(wrong_fg)))
                if c in (CONFIDENCE, LINE):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.setItem(r, c, item)
        self._filling = False

    def fit_columns(self, width: int) -> None:
        """The text columns share what the others leave of `width`: question 50 %,
        answer 30 %, accepted 20 %."""
        fixed = sum(self.columnWidth(c) for c in (CONFIDENCE, VERDICT, LINE))
        room = max(width - fixed - 24, 300)
        for c, share in ((QUESTION, 0.5), (ANSWER, 0.3), (ACCEPTED, 0.2)):
            self.setColumnWidth(c, int(room * share))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.fit_columns(self.viewport().width())

    def _on_item(self, item: QTableWidgetItem) -> None:
        if self._filling or item.column() != VERDICT:
            return
        self.flipped.emit(self.order[item.row()], item.checkState() == Qt.Checked)

    def _on_click(self, r: int, c: int) -> None:
        if c != VERDICT and 0 <= r < len(self.order):
            self.opened.emit(self.order[r])
