"""Temperature effect at the selected step: the top candidates' probabilities and
the entropy as T runs 0 -> 2, the current temperature marked. Redrawn from the
step's record alone, so moving the slider never re-runs the model."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF

from app.charts.base import (
    NOT_REPORTED,
    empty_text,
    pen,
    set_title,
    short,
    show_empty,
    style_plot,
    view_point,
)
from app.core.theme import ENTROPY
from engine.run import temperature
from engine.run.records import ModelRecord, TokenRecord

CURVE_T = np.linspace(0.0, 2.0, 81)
N_CURVES = 5
COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d")
KEY_MIN_CHARS = 6  # a name in the key is never cut shorter than this
KEY_MAX_CHARS = 20  # nor kept longer, however wide the chart
KEY_MARGIN_PX = 24  # the title's side margins


def _key_font() -> QFont:
    font = QFont()
    font.setPointSize(8)  # the title's detail line (charts.base.set_title)
    return font


class TemperatureChart(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        plot = self.getPlotItem()
        style_plot(plot, "Temperature effect", left="probability", bottom="temperature")
        plot.setMouseEnabled(x=False, y=False)
        plot.setRange(xRange=(0, 2), yRange=(0, 1), padding=0.02)
        # The curves' names go in the title lines, so no legend box covers a curve.
        self.empty = empty_text(plot, "Run a prompt to see how T reshapes a step")
        self.curves = [plot.plot(pen=pen(c, 1.5)) for c in COLORS]
        self.key = ""
        self.markers = pg.ScatterPlotItem(size=8, pen=None)
        plot.addItem(self.markers)
        # Mid grey: >= 3:1 against the light and the dark chart background alike.
        self.t_line = pg.InfiniteLine(angle=90, pen=pen("#888888", 1, Qt.DashLine))
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
        self.record: TokenRecord | None = None
        self.temp = 0.7
        self.marker_probs = np.zeros(0)
        self.marker_entropy = 0.0
        self.show_record(None)

    def _sync_boxes(self):
        self.entropy_box.setGeometry(self.getPlotItem().vb.sceneBoundingRect())

    def show_record(
        self,
        record: TokenRecord | None,
        model: ModelRecord | None = None,
        temp: float | None = None,
    ) -> None:
        """Draw `record`'s sweep; `temp` (the sampling panel's) is where the marker goes."""
        if temp is not None:
            self.temp = float(temp)
        self.record = record if record is not None and temperature.has_sweep(record) else None
        remote = model is not None and model.backend != "mlx"
        # A server gives only its top-k: the curves are renormalised over those, and say so.
        self.scope = " (top-k)" if remote else ""
        message = None
        if record is not None and self.record is None and remote:
            message = NOT_REPORTED.format(what="log-probabilities of the candidates")
        show_empty(self.getPlotItem(), self.empty, self.record is None, x=(0, 2), message=message)
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
            self.key = self._key()
            h = temperature.entropy(self.record, CURVE_T)
            self.entropy_curve.setData(CURVE_T, h)
            self.entropy_box.setYRange(0, max(float(h.max()), 0.5) * 1.05, padding=0)
        self.set_temperature(self.temp)

    def key_names(self) -> list[str]:
        """The candidates' names in the key: as long as one line of the chart's width
        allows (KEY_MIN_CHARS..KEY_MAX_CHARS each), cut with '…' only past that."""
        if self.record is None:
            return []
        texts = [c.text for c in self.record.top[:N_CURVES]]
        metrics = QFontMetricsF(_key_font())
        room = max(self.width() - KEY_MARGIN_PX, 0)
        for limit in range(KEY_MAX_CHARS, KEY_MIN_CHARS, -1):
            names = [short(t, limit) for t in texts]
            line = " ".join(f"■ {n}" for n in names) + " ┅ entropy"
            if metrics.horizontalAdvance(line) <= room:
                return names
        return [short(t, KEY_MIN_CHARS) for t in texts]

    def _key(self) -> str:
        return (
            " ".join(
                f"<span style='color:{color}'>■&nbsp;{html.escape(name)}</span>"
                for color, name in zip(COLORS, self.key_names(), strict=False)
            )
            + f" <span style='color:{ENTROPY}'>┅&nbsp;entropy</span>"
        )

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if getattr(self, "record", None) is not None:  # the key takes the room it is given
            key = self._key()
            if key != self.key:
                self.key = key
                self.set_temperature(self.temp)

    def set_temperature(self, temp: float) -> None:
        """Move the marker and recompute the candidates' probabilities at `temp`."""
        self.temp = float(temp)
        self.t_line.setValue(self.temp)
        if self.record is None:
            self.markers.setData([], [])
            self.marker_probs = np.zeros(0)
            set_title(self.getPlotItem(), "Temperature effect", "top candidates and entropy, T 0→2")
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
            f"step {self.record.step} · T={self.temp:.2f}: top {self.marker_probs[0]:.1%}, "
            f"H={self.marker_entropy:.2f}{self.scope}<br>{self.key}",
        )

    def readout(self, scene_pos) -> str | None:
        """The top candidates' probabilities and the entropy at the T under the cursor."""
        p = view_point(self.getPlotItem(), scene_pos)
        if p is None or self.record is None:
            return None
        t = min(max(p.x(), 0.0), 2.0)
        probs = temperature.probabilities(self.record, [t], N_CURVES)[:, 0]
        h = float(temperature.entropy(self.record, [t])[0])
        parts = [f"{short(c.text)!r} {q:.1%}" for c, q in zip(self.record.top, probs, strict=False)]
        return f"T={t:.2f}: " + ", ".join(parts[:3]) + f" · H={h:.2f} nats"
