"""The sampler funnel as a table and a chart: one row (bar) per stage in the order the engine (and
mlx-lm) applies them, with the tokens left, the probability mass kept and the
chosen token's probability and rank in that stage's renormalised distribution."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from app.charts.base import decade_ticks, style_plot
from app.core.theme import SAMPLED
from engine.display.units import fmt_prob
from engine.inside.inside_results import FunnelStage

HEADERS = ("stage", "tokens left", "mass kept", "chosen p", "chosen rank")


def _pct(x) -> str:
    return "—" if x is None else fmt_prob(x)  # a tiny p keeps its digits: 0.0085%


class FunnelTable(QTableWidget):
    """Rows of stages; a stage's detail is its tooltip."""

    def __init__(self, parent=None):
        super().__init__(0, len(HEADERS), parent)
        self.setHorizontalHeaderLabels(HEADERS)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.verticalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.setMinimumHeight(150)
        self.setMaximumHeight(230)
        self.greedy = False

    def show_stages(self, stages: tuple[FunnelStage, ...], greedy: bool) -> None:
        """Fill the rows from the journey record's sampling stages."""
        self.greedy = greedy
        self.setRowCount(len(stages))
        for r, s in enumerate(stages):
            removed = s.chosen_prob is not None and s.chosen_rank is None
            rank = "removed" if removed else "—" if s.chosen_rank is None else str(s.chosen_rank)
            cells = (s.stage, f"{s.tokens:,}", _pct(s.mass), _pct(s.chosen_prob), rank)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(s.detail)
                self.setItem(r, c, item)
        self.resizeRowsToContents()


class FunnelChart(pg.PlotWidget):
    """Tokens left after each stage as horizontal bars on a log axis, the first stage
    on top, named on the left axis (the table beside it has the numbers)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        item = self.getPlotItem()
        style_plot(item, "The funnel", bottom="tokens left (log scale)")
        item.setMouseEnabled(x=False, y=False)
        item.invertY(True)
        self.bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.7, brush=SAMPLED)
        item.addItem(self.bars)
        self.setMinimumHeight(150)
        self.setMaximumHeight(230)

    def show_stages(self, stages: tuple[FunnelStage, ...]) -> None:
        """One bar per stage (the x axis is log10 of the count)."""
        item = self.getPlotItem()
        widths = np.log10(np.maximum([s.tokens for s in stages], 1)) + 0.05
        y = np.arange(len(stages), dtype=float)
        self.bars.setOpts(x0=np.zeros(len(stages)), y=y, width=widths, height=0.7)
        item.getAxis("left").setTicks([[(float(i), s.stage) for i, s in enumerate(stages)]])
        top = float(widths.max()) if len(widths) else 1.0
        item.setXRange(-0.06 * top, top * 1.05, padding=0)  # the tick at 1 (x = 0) is drawn
        item.setYRange(-0.5, len(stages) - 0.5, padding=0)
        item.getAxis("bottom").setTicks(decade_ticks(int(top), short_form=True))  # 1 10 100 1k
