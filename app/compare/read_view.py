"""Two reads compared, drawn: the chart of the comparison (engine/reading/compare_reads.py)
the Comparison holds, and the list of where the two reads disagree most.

One tokenization: each token's Δ log-probability (B − A, nats) as bars, and the KL
divergence KL(A ‖ B) over the candidates both reads list (a lower bound) as a line.
Different tokenizers, or two texts: each word's surprisal (bits, summed over its
tokens) for both lanes, side by side. Clicking a row of the list (or a bar) selects
it in the Comparison: both lanes point at their own step there."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from app.charts.base import pen, set_title, short, style_plot
from app.session.comparison import Comparison, lane_name

TITLE = "Two reads"
UP, DOWN = "#54a24b", "#e45756"  # B likelier than A / less likely
KL_COLOR = "#7f7f7f"
MOST_HEIGHT = 76  # px: about four rows of the list, the chart keeps the rest


class ReadView(QWidget):
    """The comparison of two reading lanes (`colors`: each lane's colour)."""

    def __init__(self, comparison: Comparison, colors, parent=None):
        super().__init__(parent)
        self.comparison, self.colors = comparison, colors
        self.chart = pg.PlotWidget()
        style_plot(self.chart.getPlotItem(), TITLE)
        self.chart.setMouseEnabled(x=True, y=False)
        self.why = QLabel()
        self.why.setWordWrap(True)
        self.why.setTextFormat(Qt.PlainText)
        self.why.setStyleSheet("font-size: 11px;")  # three lines at most under the chart
        self.most = QListWidget()
        self.most.setStyleSheet("font-size: 11px;")
        self.most.setMaximumHeight(MOST_HEIGHT)
        self.most.setToolTip("Click: point both lanes at this place in their text")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.why)
        layout.setSpacing(2)
        layout.addWidget(QLabel("<small>Where they disagree most (click to select):</small>"))
        layout.addWidget(self.most)
        self.most.itemClicked.connect(lambda item: self._select(item.data(Qt.UserRole)))
        self.shown: dict[str, np.ndarray] = {}  # the series on the chart (tests read them)
        self.marker = pg.InfiniteLine(angle=90, pen=pen("#e45756", 1))

    def _select(self, row) -> None:
        if row is not None:
            self.comparison.select_read_row(int(row))

    def draw(self) -> None:
        """Everything from the Comparison's read_comparison (nothing when there is none)."""
        c = self.comparison.read_comparison
        plot = self.chart.getPlotItem()
        plot.clear()
        self.most.clear()
        self.shown = {}
        if c is None:
            return
        a, b = (lane_name(i) for i in self.comparison.read_lanes)
        x = np.arange(len(c.labels), dtype=float)
        if c.kind == "tokens":
            self._draw_tokens(plot, c, x, a, b)
        else:
            self._draw_words(plot, c, x, a, b)
        ticks = [(i, short(t.strip() or repr(t), 8)) for i, t in enumerate(c.labels)]
        step = max(1, len(ticks) // 12)  # at most a dozen labels: they never overlap
        plot.getAxis("bottom").setTicks([ticks[::step]])
        plot.setXRange(-0.6, max(len(x), 4) - 0.4, padding=0)
        plot.addItem(self.marker)
        self.why.setText(c.why + " " + self._totals(c, a, b))
        self._fill_most(c, a, b)
        self.show_row(self.comparison.read_row)

    def _draw_tokens(self, plot, c, x, a, b) -> None:
        delta, kl = np.array(c.delta, float), np.array(c.kl, float)
        brushes = [UP if d >= 0 else DOWN for d in np.nan_to_num(delta)]
        plot.addItem(pg.BarGraphItem(x=x, height=np.nan_to_num(delta), width=0.7, brushes=brushes))
        plot.plot(x, kl, pen=pen(KL_COLOR, 1.5), symbol="o", symbolSize=4)
        self.shown = {"delta": delta, "kl": kl}
        set_title(
            plot,
            TITLE,
            f"Δ log p ({b} − {a}, nats): <span style='color:{UP}'>■ {b} likelier</span> "
            f"<span style='color:{DOWN}'>■ {a} likelier</span> "
            f"<span style='color:{KL_COLOR}'>— KL({a}‖{b})</span>",
        )
        plot.setLabel("left", "nats")

    def _draw_words(self, plot, c, x, a, b) -> None:
        va, vb = np.array(c.values_a, float), np.array(c.values_b, float)
        ca, cb = (self.colors[i % len(self.colors)] for i in self.comparison.read_lanes)
        for off, values, color in ((-0.2, va, ca), (0.2, vb, cb)):
            plot.addItem(
                pg.BarGraphItem(x=x + off, height=np.nan_to_num(values), width=0.38, brush=color)
            )
        self.shown = {"a": va, "b": vb, "delta": np.array(c.delta, float)}
        set_title(
            plot,
            TITLE,
            f"surprisal per word (bits): <span style='color:{ca}'>■ {a}</span> "
            f"<span style='color:{cb}'>■ {b}</span>",
        )
        plot.setLabel("left", "bits")

    @staticmethod
    def _totals(c, a: str, b: str) -> str:
        parts = []
        for name, bits, bpb in ((a, c.bits_a, c.bits_per_byte_a), (b, c.bits_b, c.bits_per_byte_b)):
            if bpb is not None:
                parts.append(f"{name}: {bits:.1f} bits, {bpb:.3f} bits/byte")
        return "; ".join(parts) + "."

    def _fill_most(self, c, a: str, b: str) -> None:
        unit = "nats" if c.kind == "tokens" else "bits"
        what = "Δ log p" if c.kind == "tokens" else "Δ surprisal"
        for row in c.most_delta:
            text = (
                f"{c.labels[row].strip()!r}: {what} {b}−{a} {c.delta[row]:+.3f} {unit} "
                f"({a} {c.values_a[row]:.3f}, {b} {c.values_b[row]:.3f})"
            )
            self._add_item(text, row)
        for row in c.most_kl:
            if not math.isnan(c.kl[row]):
                self._add_item(
                    f"{c.labels[row].strip()!r}: KL({a}‖{b}) ≥ {c.kl[row]:.3f} nats "
                    f"({c.kl_mass[row]:.0%} of {a}'s probability known to both)",
                    row,
                )

    def _add_item(self, text: str, row: int) -> None:
        item = QListWidgetItem(text)
        item.setData(Qt.UserRole, row)
        self.most.addItem(item)

    def show_row(self, row: int | None) -> None:
        """Mark the selected row on the chart (hidden when none is)."""
        self.marker.setVisible(row is not None)
        if row is not None:
            self.marker.setValue(row)
