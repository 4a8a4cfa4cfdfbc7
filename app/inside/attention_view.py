"""Attention heatmap: query tokens x key tokens for one layer and head (or the
mean of heads), causal, with the selected step's row outlined; hover a cell for
its weight. Before a result (and while one is computed) the chart is an empty state
with a line saying so, never an empty axis with a stray outline."""

from __future__ import annotations

from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from app.charts.base import empty_text, set_title, short, show_empty, style_plot, view_point

MAX_LABELS = 48  # token labels on an axis beyond this are thinned
LABEL_CHARS = 10  # a token's label on an axis is cut past this
LABEL_GAP_PX = 6  # between two labels on the key axis
WAITING = "Run a prompt in the playground, then pick a token to inspect"


def label_step(labels, cell_px: float, label_px: float) -> int:
    """Every how many positions a label goes on an axis: at most MAX_LABELS, and
    never two closer than one label's size (`label_px`) at `cell_px` per position."""
    by_count = int(np.ceil(len(labels) / MAX_LABELS))
    by_room = int(np.ceil(label_px / cell_px)) if cell_px > 0 else len(labels)
    return max(1, by_count, by_room)


def _ticks(labels, step: int):
    return [[(i + 0.5, short(labels[i], LABEL_CHARS)) for i in range(0, len(labels), step)]]


class AttentionView(QWidget):
    """Layer and head pickers above the heatmap; `request` asks for a new layer/head."""

    request = Signal(int, object)  # layer, head (None = mean of heads)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.layer = QSpinBox()
        self.layer.setToolTip("Transformer layer (0 = nearest the embeddings)")
        self.head = QComboBox()
        self.head.setToolTip("One attention head, or the mean over all heads")
        self.head.addItem("mean of heads", None)
        self.hover = QLabel("Hover a cell for its weight")
        bar = QHBoxLayout()
        for w in (QLabel("Layer"), self.layer, QLabel("Head"), self.head):
            bar.addWidget(w)
        bar.addStretch(1)
        bar.addWidget(self.hover)
        self.plot = pg.PlotWidget()
        item = self.plot.getPlotItem()
        style_plot(
            item,
            "Attention",
            left="query token (what is predicted next)",
            bottom="key token (attended to)",
        )
        item.invertY(True)
        item.setMouseEnabled(x=False, y=False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setLookupTable(pg.colormap.get("viridis").getLookupTable(nPts=256))
        item.addItem(self.image)
        self.row_box = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.row_box.setPen(pg.mkPen("#ff3b30", width=2))
        item.addItem(self.row_box)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.plot, 1)
        self.weights = None
        self.labels: tuple[str, ...] = ()
        self.layer.valueChanged.connect(self._changed)
        self.head.currentIndexChanged.connect(self._changed)
        self.plot.scene().sigMouseMoved.connect(self._on_move)
        item.vb.sigResized.connect(self._fit_ticks)
        self.empty = empty_text(item, WAITING)
        self.show_empty(WAITING)

    def show_empty(self, message: str) -> None:
        """No heatmap: `message` in its place (nothing yet, or being computed)."""
        self.weights = None
        self.image.clear()
        self.row_box.hide()
        item = self.plot.getPlotItem()
        set_title(item, "Attention")
        for name in ("bottom", "left"):  # no token positions to number
            item.getAxis(name).setTicks([[]])
        show_empty(item, self.empty, True, message=message)

    def reset_readout(self) -> None:
        """Another run or step: the hover line keeps nothing read from the last one."""
        self.hover.setText("Hover a cell for its weight")

    def _changed(self, *_):
        self.request.emit(self.layer.value(), self.head.currentData())

    def set_shape(self, layers: int, heads: int) -> None:
        """The model's layer and head counts (pickers keep their choice where valid)."""
        self.layer.blockSignals(True)
        self.head.blockSignals(True)
        self.layer.setRange(0, max(layers - 1, 0))
        if self.head.count() != heads + 1:
            current = self.head.currentData()
            self.head.clear()
            self.head.addItem("mean of heads", None)
            for h in range(heads):
                self.head.addItem(f"head {h}", h)
            index = self.head.findData(current)
            self.head.setCurrentIndex(max(index, 0))
        self.layer.blockSignals(False)
        self.head.blockSignals(False)

    def show_record(self, record) -> None:
        d = record.data  # an AttentionResult (engine/inside/inside_results.py)
        self.set_shape(record.layers, record.heads)
        self.weights = np.asarray(d.weights, dtype=np.float32)
        self.labels = record.labels
        n = len(self.labels)
        item = self.plot.getPlotItem()
        show_empty(item, self.empty, False)
        self.row_box.show()
        self.image.setImage(self.weights, levels=(0.0, float(self.weights.max() or 1.0)))
        self.image.setRect(0, 0, n, n)
        self.row_box.setRect(0, n - 1, n, 1)
        self._fit_ticks()
        item.setRange(xRange=(0, n), yRange=(0, n), padding=0.01)
        head = "mean of heads" if d.head is None else f"head {d.head}"
        where = "the prompt" if record.step is None else f"step {record.step}"
        row = self.weights[-1]
        top = int(row.argmax())
        set_title(
            item,
            "Attention",
            f"layer {d.layer} · {head} · {where} · "
            f"{escape(repr(short(self.labels[-1])))} attends most to "
            f"{escape(repr(short(self.labels[top])))} "
            f"({row[top]:.2f})",
        )

    def label_steps(self) -> tuple[int, int]:
        """(key axis, query axis): every how many tokens is named at the plot's size,
        so the key tokens' names never run together."""
        item = self.plot.getPlotItem()
        n = max(len(self.labels), 1)
        font = item.getAxis("bottom").style["tickFont"] or QFont()
        metrics = QFontMetricsF(font)
        widest = max(
            (metrics.horizontalAdvance(short(t, LABEL_CHARS)) for t in self.labels), default=0.0
        )
        return (
            label_step(self.labels, item.vb.width() / n, widest + LABEL_GAP_PX),
            label_step(self.labels, item.vb.height() / n, metrics.height()),
        )

    def _fit_ticks(self) -> None:
        if self.weights is None:
            return
        item = self.plot.getPlotItem()
        key_step, query_step = self.label_steps()
        item.getAxis("bottom").setTicks(_ticks(self.labels, key_step))
        item.getAxis("left").setTicks(_ticks(self.labels, query_step))

    def _on_move(self, pos) -> None:
        if self.weights is None:
            return
        point = view_point(self.plot.getPlotItem(), pos)
        if point is None:
            return
        col, row = int(np.floor(point.x())), int(np.floor(point.y()))
        n = len(self.labels)
        if 0 <= row < n and 0 <= col < n:
            w = self.weights[row, col]
            self.hover.setText(
                f"{self.labels[row]!r} → {self.labels[col]!r}: {w:.4f}"
                + ("  (future: masked)" if col > row else "")
            )
            self.hover.setToolTip(f"query position {row}, key position {col}")
        self.hover.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
