"""Two models on the same questions, side by side: the Confidence tab's "Compare with…".

The tab's result (the playground's model, a person's verdicts in) is side A; the same
CalibrateParams run on the model chosen in "Compare with…" is side B. Shown: each
side's model and accuracy, every signal's AUROC with its 95 % interval for both, and a
table with both answers and verdicts per question (paired by the question file's line).
Every cell is read from its own side's ConfidenceResult; nothing is recomputed here.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.lab.confidence_charts import short_name
from engine.lab.confidence import ConfidenceResult, SignalSummary
from engine.lab.confidence_stats import half_up

NOT_ASKED = "—"  # a question the other side did not answer (a cancelled run)


def auroc_text(s: SignalSummary | None) -> str:
    """'0.92 (0.73–1.00)', 'not informative here', or '—' (not measured / undefined)."""
    if s is None:
        return NOT_ASKED
    if not s.informative:
        return "not informative here"
    if s.auroc is None:
        return "undefined"
    text = half_up(s.auroc, 2)
    if s.auroc_low is not None and s.auroc_high is not None:
        text += f" ({half_up(s.auroc_low, 2)}–{half_up(s.auroc_high, 2)})"
    return text


def side_text(r: ConfidenceResult) -> str:
    """One side's model and accuracy: 'SmolLM2: 40 % right (2 of 5)'."""
    if r.accuracy is None:
        return f"{r.model}: no question answered"
    right = sum(row.correct for row in r.rows)
    return f"{r.model}: {half_up(100 * r.accuracy)} % right ({right} of {r.answered})"


def judged(answer: str) -> str:
    """The answer's first non-empty line: the one the correctness rule judges."""
    lines = [ln for ln in answer.strip().splitlines() if ln.strip()]
    return lines[0].strip() if lines else ""


def verdict(row) -> str:
    return NOT_ASKED if row is None else ("✓ right" if row.correct else "✗ wrong")


def signal_cells(a: ConfidenceResult, b: ConfidenceResult) -> list[list[str]]:
    """Per signal either side measured (A's order, then B's own): name, A's AUROC, B's."""
    by_a, by_b = {s.key: s for s in a.signals}, {s.key: s for s in b.signals}
    keys = list(by_a) + [k for k in by_b if k not in by_a]
    return [[short_name(k), auroc_text(by_a.get(k)), auroc_text(by_b.get(k))] for k in keys]


def question_cells(a: ConfidenceResult, b: ConfidenceResult) -> list[list[str]]:
    """Per question (by its line, A's order, then any only B answered): the question,
    A's judged answer and verdict, B's."""
    by_a, by_b = {r.line: r for r in a.rows}, {r.line: r for r in b.rows}
    lines = list(by_a) + [n for n in by_b if n not in by_a]
    out = []
    for n in lines:
        ra, rb = by_a.get(n), by_b.get(n)
        question = (ra or rb).question
        cells = [question]
        for row in (ra, rb):
            cells += [NOT_ASKED if row is None else judged(row.answer), verdict(row)]
        out.append(cells)
    return out


def _fill(table: QTableWidget, cells: list[list[str]]) -> None:
    table.setRowCount(len(cells))
    for i, row in enumerate(cells):
        for j, text in enumerate(row):
            item = QTableWidgetItem(text)
            item.setFlags(Qt.ItemIsSelectable | Qt.ItemIsEnabled)
            table.setItem(i, j, item)


class ConfidenceCompare(QWidget):
    """Side A (the tab's result) and side B (the chosen model's) on the same questions."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.a: ConfidenceResult | None = None
        self.b: ConfidenceResult | None = None
        self.head = QLabel(
            "Choose a model in “Compare with…” and press Compare: it answers the same "
            "questions, and both results show here side by side."
        )
        self.head.setWordWrap(True)
        self.head.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.signals = QTableWidget(0, 3)
        self.questions = QTableWidget(0, 5)
        for table in (self.signals, self.questions):
            table.verticalHeader().hide()
            table.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
            table.horizontalHeader().setStretchLastSection(True)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.signals)
        split.addWidget(self.questions)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.head)
        layout.addWidget(split, 1)

    def show_pair(self, a: ConfidenceResult, b: ConfidenceResult) -> None:
        """Draw A and B; every cell is its own side's figure."""
        self.a, self.b = a, b
        why = "".join(
            f" {tag}'s AUROC is undefined: {r.why}" for r, tag in ((a, "A"), (b, "B")) if r.why
        )
        self.head.setText(
            f"A — {side_text(a)}.  B — {side_text(b)}.  Same questions ({a.questions_file}), "
            f"{a.samples} samples each at temperature {a.temperature:g}. AUROC with its 95 % "
            f"interval; 0.5 is chance.{why}"
        )
        self.signals.setHorizontalHeaderLabels(["Signal", f"A: {a.model}", f"B: {b.model}"])
        _fill(self.signals, signal_cells(a, b))
        self.questions.setHorizontalHeaderLabels(["Question", "A's answer", "A", "B's answer", "B"])
        _fill(self.questions, question_cells(a, b))
        self.signals.resizeColumnsToContents()
        self.questions.resizeColumnsToContents()
