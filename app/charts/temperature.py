"""Temperature effect at the selected step: the top candidates' probabilities and
the entropy as T runs 0 -> 2, the current temperature marked. Redrawn from the
step's record alone, so moving the slider never re-runs the model."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.charts.base import pen, set_title, short, style_plot
from app.theme import ENTROPY
from engine import temperature
from engine.records import TokenRecord

CURVE_T = np.linspace(0.0, 2.0, 81)
N_CURVES = 5
COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d")


class TemperatureChart(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        plot = self.getPlotItem()
        style_plot(plot, "Temperature effect", left="probability", bottom="temperature")
        plot.setMouseEnabled(x=False, y=False)
        plot.setRange(xRange=(0, 2), yRange=(0, 1), padding=0.02)
        self.legend = plot.addLegend(offset=(-8, 8), labelTextSize="8pt")
        self.curves = [plot.plot(pen=pen(c, 1.5), name=f"#{i + 1}") for i, c in enumerate(COLORS)]
        self.markers = pg.ScatterPlotItem(size=8, pen=None)
        plot.addItem(self.markers)
        self.t_line = pg.InfiniteLine(angle=90, pen=pen("#333333", 1, Qt.DashLine))
        plot.addItem(self.t_line)
        # Entropy on its own right-hand axis (nats).
        self.entropy_box = pg.ViewBox()
        plot.showAxis("right")
        plot.scene().addItem(self.entropy_box)
        plot.getAxis("right").linkToView(self.entropy_box)
        plot.getAxis("right").setLabel("entropy (nats)", color=ENTROPY, **{"font-size": "8pt"})
        self.entropy_box.setXLink(plot)
        self.entropy_curve = pg.PlotCurveItem(pen=pen(ENTROPY, 2, Qt.DotLine))
        self.entropy_box.addItem(self.entropy_curve)
        plot.vb.sigResized.connect(self._sync_boxes)
        self.legend.addItem(self.entropy_curve, "entropy")
        self.record: TokenRecord | None = None
        self.temp = 0.7
        self.marker_probs = np.zeros(0)
        self.marker_entropy = 0.0

    def _sync_boxes(self):
        self.entropy_box.setGeometry(self.getPlotItem().vb.sceneBoundingRect())

    def show_record(self, record: TokenRecord | None) -> None:
        self.record = record if record is not None and temperature.has_sweep(record) else None
        if self.record is None:
            for c in self.curves:
                c.setData([], [])
            self.entropy_curve.setData([], [])
        else:
            probs = temperature.probabilities(self.record, CURVE_T, N_CURVES)
            for i, curve in enumerate(self.curves):
                if i < len(probs):
                    curve.setData(CURVE_T, probs[i])
                else:
                    curve.setData([], [])
            for i, (_sample, label) in enumerate(self.legend.items[:N_CURVES]):
                text = short(self.record.top[i].text) if i < len(self.record.top) else ""
                label.setText(repr(text), size="8pt")
            h = temperature.entropy(self.record, CURVE_T)
            self.entropy_curve.setData(CURVE_T, h)
            self.entropy_box.setYRange(0, max(float(h.max()), 0.5) * 1.05, padding=0)
        self.set_temperature(self.temp)

    def set_temperature(self, temp: float) -> None:
        """Move the marker and recompute the candidates' probabilities at `temp`."""
        self.temp = float(temp)
        self.t_line.setValue(self.temp)
        if self.record is None:
            self.markers.setData([], [])
            self.marker_probs = np.zeros(0)
            set_title(self.getPlotItem(), "Temperature effect", "no step yet")
            return
        self.marker_probs = temperature.probabilities(self.record, [self.temp], N_CURVES)[:, 0]
        self.marker_entropy = float(temperature.entropy(self.record, [self.temp])[0])
        n = len(self.marker_probs)
        self.markers.setData(
            [self.temp] * n, self.marker_probs, brush=[pg.mkBrush(c) for c in COLORS[:n]]
        )
        set_title(
            self.getPlotItem(),
            "Temperature effect",
            f"step {self.record.step} · at T={self.temp:.2f}: top p={self.marker_probs[0]:.1%}, "
            f"H={self.marker_entropy:.2f} nats",
        )
