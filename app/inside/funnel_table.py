"""The sampler funnel as a table: one row per stage in the order the engine (and
mlx-lm) applies them, with the tokens left, the probability mass kept and the
chosen token's probability and rank in that stage's renormalised distribution."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

HEADERS = ("stage", "tokens left", "mass kept", "chosen p", "chosen rank")


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.2f}%"


class FunnelTable(QTableWidget):
    """Rows of stages; a stage's detail is its tooltip."""

    def __init__(self, parent=None):
        super().__init__(0, len(HEADERS), parent)
        self.setHorizontalHeaderLabels(HEADERS)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.verticalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.setMinimumHeight(200)
        self.greedy = False

    def show_stages(self, stages: list[dict], greedy: bool) -> None:
        """Fill the rows from the journey record's sampling stages."""
        self.greedy = greedy
        self.setRowCount(len(stages))
        for r, s in enumerate(stages):
            removed = s["chosen_prob"] is not None and s["chosen_rank"] is None
            rank = (
                "removed" if removed else "—" if s["chosen_rank"] is None else str(s["chosen_rank"])
            )
            cells = (s["stage"], f"{s['tokens']:,}", _pct(s["mass"]), _pct(s["chosen_prob"]), rank)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(s["detail"])
                self.setItem(r, c, item)
        self.resizeRowsToContents()
