"""Attention by position: how the selected query token's attention spreads over the
context (mean of heads; averaged over layers or one layer), drawn along the
positions with the prompt's end marked, and summed in bins: the first token (the
"attention sink"), the first 10%, the middle, the last 10% and the recent 32.
All layers arrive in one record, so choosing a layer needs no new computation."""

from __future__ import annotations

from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import pen, set_title, style_plot
from app.core.theme import MUTED, OUTPUT, RAW

TITLE = "Attention by position"


class PositionView(QWidget):
    """A layer picker, the mass along the context and the bins' table."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.record = None
        self.layer = QComboBox()
        self.layer.setToolTip("Average the layers, or show one layer's attention")
        self.layer.addItem("mean of layers", None)
        self.log = QCheckBox("log scale")
        self.log.setToolTip("A logarithmic axis shows the small masses beside the sink")
        bar = QHBoxLayout()
        for w in (QLabel("Layers"), self.layer, self.log):
            bar.addWidget(w)
        bar.addStretch(1)
        self.plot = pg.PlotWidget()
        item = self.plot.getPlotItem()
        style_plot(
            item, TITLE, left="attention mass (mean of heads)", bottom="position in the context"
        )
        item.setMouseEnabled(x=False, y=False)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.9, brush=RAW)
        item.addItem(self.bars)
        self.curve = item.plot([], [], pen=pen(RAW))  # log scale: bars cannot start at 0
        self.prompt_end = pg.InfiniteLine(angle=90, pen=pen(OUTPUT, 1, Qt.DashLine))
        item.addItem(self.prompt_end)
        self.regions = {}  # the first and last 10%, shaded along the context
        for name in ("first 10%", "last 10%"):
            region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(128, 128, 128, 40))
            region.setZValue(-10)
            for line in region.lines:
                line.setPen(pg.mkPen(None))  # a shaded band, no draggable-looking edges
            item.addItem(region)
            self.regions[name] = region
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["bin", "positions", "mass"])
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.note = QLabel(
            "The first four bins split the context and sum to 100%; “recent 32” overlaps "
            "the end. Shaded: the first and last 10%. The dashed line is where the prompt "
            "ends and the answer begins."
        )
        self.note.setWordWrap(True)
        self.note.setStyleSheet(f"color: {MUTED}")
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 4, 8)
        side_layout.addWidget(self.table, 1)
        side_layout.addWidget(self.note)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.plot)
        split.addWidget(side)
        split.setSizes([820, 340])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(split, 1)
        self.layer.currentIndexChanged.connect(lambda _i: self._draw())
        self.log.toggled.connect(lambda _on: self._draw())

    def show_record(self, record) -> None:
        """Show a position InspectRecord (every layer's masses)."""
        self.record = record
        n = record.layers
        if self.layer.count() != n + 1:
            keep = self.layer.currentData()
            self.layer.blockSignals(True)
            self.layer.clear()
            self.layer.addItem("mean of layers", None)
            for i in range(n):
                self.layer.addItem(f"layer {i}", i)
            index = self.layer.findData(keep)
            self.layer.setCurrentIndex(max(index, 0))
            self.layer.blockSignals(False)
        self._draw()

    def masses(self) -> tuple[np.ndarray, dict]:
        """The masses and bins on screen (the mean of layers or the chosen layer)."""
        d, layer = self.record.data, self.layer.currentData()  # a PositionResult
        if layer is None:
            return np.array(d.mean), d.bins
        return np.array(d.by_layer[layer]), d.bins_by_layer[layer]

    def _draw(self) -> None:
        if self.record is None:
            return
        d = self.record.data
        mass, bins = self.masses()
        x = np.arange(len(mass), dtype=float)
        item = self.plot.getPlotItem()
        log = self.log.isChecked()
        item.setLogMode(y=log)
        if log:
            self.bars.setOpts(x=[], height=[])
            self.curve.setData(x, np.maximum(mass, 1e-9))
        else:
            self.curve.setData([], [])
            self.bars.setOpts(x=x, height=mass, width=0.9)
        self.prompt_end.setPos(d.prompt_tokens - 0.5)
        for name, region in self.regions.items():
            a, b = d.edges[name]
            region.setRegion((a - 0.5, b - 0.5))
        item.setXRange(-0.5, len(mass) - 0.5, padding=0.01)
        self.table.setRowCount(len(bins))
        for r, (name, value) in enumerate(bins.items()):
            a, b = d.edges[name]
            span = "—" if b <= a else f"{a}–{b - 1}"
            for c, text in enumerate((name, span, f"{100 * value:.2f}%")):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        which = self.layer.currentText()
        query = escape(repr(self.record.labels[-1]))
        detail = f"query {query} · {which} · first token {100 * bins['first token']:.1f}%"
        set_title(item, TITLE, detail)
