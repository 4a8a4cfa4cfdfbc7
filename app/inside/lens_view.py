"""Logit lens: what the model would predict if it stopped after each layer (the
final norm and output projection applied to that layer's residual stream), as a
layers x top-k table, and the chosen token's rank by layer."""

from __future__ import annotations

from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QSplitter, QTableWidget, QTableWidgetItem

from app.charts.base import pen, set_title, short, style_plot
from app.core.theme import OUTPUT
from engine.display.units import fmt_prob

CHOSEN_BG = QColor("#ffe08a")


class LensView(QSplitter):
    def __init__(self, parent=None):
        super().__init__(Qt.Horizontal, parent)
        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setToolTip("Each layer's top predictions; the chosen token is highlighted")
        self.rank = pg.PlotWidget()
        item = self.rank.getPlotItem()
        style_plot(item, "Chosen token by layer", left="rank (1 = top)", bottom="layer")
        item.setLogMode(y=True)
        item.invertY(True)
        self.rank_curve = item.plot(
            [], [], pen=pen(OUTPUT, 2), symbol="o", symbolSize=5, symbolBrush=OUTPUT
        )
        self.addWidget(self.table)
        self.addWidget(self.rank)
        self.setSizes([720, 460])
        # log10 ticks labelled as plain ranks
        item.getAxis("left").setTicks(
            [[(np.log10(v), f"{v:,}") for v in (1, 2, 5, 10, 100, 1_000, 10_000, 100_000)]]
        )

    def show_record(self, record) -> None:
        d = record.data  # a LensResult (engine/inside/inside_results.py)
        rows, names = d.rows, d.token_labels
        chosen = d.chosen
        k = max(len(r.top) for r in rows)
        headers = [f"#{i + 1}" for i in range(k)] + (
            ["chosen p", "rank"] if chosen is not None else []
        )
        self.table.setRowCount(len(rows))
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.setVerticalHeaderLabels([f"layer {i}" for i in range(len(rows))])
        for r, row in enumerate(rows):
            for c, (tid, p) in enumerate(row.top):
                cell = QTableWidgetItem(f"{short(names[str(tid)], 12)}  {p:.2f}")
                cell.setToolTip(escape(f"token {tid} {names[str(tid)]!r}: p = {p:.4f}"))
                if tid == chosen:
                    cell.setBackground(QBrush(CHOSEN_BG))
                self.table.setItem(r, c, cell)
            if chosen is not None:
                self.table.setItem(r, k, QTableWidgetItem(fmt_prob(row.chosen_prob)))
                self.table.setItem(r, k + 1, QTableWidgetItem(str(row.chosen_rank)))
        self.table.resizeColumnsToContents()
        self.table.scrollToBottom()
        item = self.rank.getPlotItem()
        where = "the prompt" if record.step is None else f"step {record.step}"
        if chosen is None:
            self.rank_curve.setData([], [])
            set_title(item, "Chosen token by layer", f"{where}: no token chosen yet")
            return
        ranks = np.array([row.chosen_rank for row in rows], dtype=float)
        self.rank_curve.setData(np.arange(len(ranks)), ranks)
        # "top from layer N": the first layer from which it stays the top prediction
        settled = next((i for i in range(len(ranks)) if (ranks[i:] == 1).all()), None)
        when = f"top from layer {settled} on" if settled is not None else "not top at the end"
        label = escape(repr(short(names[str(chosen)])))
        set_title(item, "Chosen token by layer", f"{where} · {label} · {when}")
