"""The Confidence tab's three charts, each drawn from a ConfidenceResult as it is:

- the reliability diagram of one signal: a bar per bin at its accuracy (the bin's count
  above it), against the diagonal where confidence equals accuracy;
- every signal's AUROC side by side, with its 95 % interval as error bars when the
  result has one, and the chance line at 0.5;
- the risk-coverage curve of every signal: the accuracy on the questions answered when
  only the most confident share (the coverage) is answered.

The chosen signal (the tab's) is drawn in the chosen-token colour in the last two.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.charts.base import (
    empty_text,
    legend_below,
    pen,
    set_title,
    show_empty,
    style_plot,
    track,
)
from app.core.theme import CHOSEN, ENTROPY, MUTED, RAW, SAMPLED, SYSTEM, THINKING

# A signal's short name for axes and legends (its full name is in the tooltips).
SHORT = {
    "mean_prob": "mean p",
    "geo_mean_prob": "geo-mean p",
    "min_prob": "min p",
    "first_prob": "first p",
    "first_entropy": "−first H",
    "p_true": "P(True)",
    "agreement": "agreement",
    "largest_cluster": "largest cluster",
    "cluster_entropy": "−cluster H",
}
# x from 0 to 1, with room for the last label ("1.0": pyqtgraph drops a label that would
# reach past the plot's edge)
UNIT_X = (-0.02, 1.06)
CURVE_COLORS = (RAW, SAMPLED, ENTROPY, SYSTEM, THINKING, "#54a24b", "#9d755d", "#bab0ac")


def short_name(key: str) -> str:
    """A signal's name in a few characters (its key when it has none)."""
    return SHORT.get(key, key)


def _fixed(plot: pg.PlotWidget) -> pg.PlotItem:
    """The plot item, its view not moved by the mouse: the ranges are the figures'."""
    item = plot.getPlotItem()
    item.setMouseEnabled(x=False, y=False)
    item.hideButtons()
    return item


class ReliabilityChart(pg.PlotWidget):
    """Accuracy against confidence, a bar per bin, for one probability signal."""

    TITLE = "Reliability"

    def __init__(self, parent=None):
        super().__init__(parent)
        item = _fixed(self)
        style_plot(item, self.TITLE, left="accuracy", bottom="confidence")
        item.addItem(pg.PlotDataItem([0, 1], [0, 1], pen=pen(MUTED, 1, Qt.DashLine)))
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.09, brush=RAW, pen=None)
        item.addItem(self.bars)
        self.counts: list[pg.TextItem] = []
        self.empty = empty_text(item, "Run to see accuracy against confidence")
        item.setRange(xRange=UNIT_X, yRange=(-0.03, 1.08), padding=0)
        self.drawn: list[tuple[float, float, float]] = []  # (low, high, accuracy) per bar

    def show_signal(self, summary) -> None:
        """Draw `summary` (a SignalSummary): its bins with a count, or say why none."""
        item = self.getPlotItem()
        for text in self.counts:
            item.removeItem(text)
        self.counts = []
        bins = [b for b in (summary.bins if summary is not None else ()) if b.count]
        self.drawn = [(b.low, b.high, b.accuracy) for b in bins]
        self.bars.setOpts(
            x=[(b.low + b.high) / 2 for b in bins],
            height=[b.accuracy for b in bins],
            width=[(b.high - b.low) * 0.9 for b in bins],
        )
        for b in bins:
            text = pg.TextItem(str(b.count), color=MUTED, anchor=(0.5, 1.0))
            text.setPos((b.low + b.high) / 2, b.accuracy)
            item.addItem(text)
            self.counts.append(text)
        if summary is None:
            set_title(item, self.TITLE)
            show_empty(item, self.empty, True, message="Run to see accuracy against confidence")
        elif not bins:
            set_title(item, self.TITLE, short_name(summary.key))
            show_empty(
                item,
                self.empty,
                True,
                message=f"{short_name(summary.key)} is not a probability:\nno reliability diagram",
            )
        else:
            ece = f"ECE {summary.ece:.3f}" if summary.ece is not None else ""
            detail = f"{short_name(summary.key)} · {ece} · above each bar: its questions"
            set_title(item, self.TITLE, detail)
            show_empty(item, self.empty, False)
        item.setRange(xRange=UNIT_X, yRange=(-0.03, 1.08), padding=0)


class AurocChart(pg.PlotWidget):
    """Every signal's AUROC as a bar (a row per signal, the first on top, its short name
    on the left), its 95 % interval as an error bar, the chance line at 0.5."""

    TITLE = "How well each signal tells right from wrong"

    def __init__(self, parent=None):
        super().__init__(parent)
        item = _fixed(self)
        style_plot(item, self.TITLE, bottom="AUROC")
        chance = pg.InfiniteLine(pos=0.5, angle=90, pen=pen(MUTED, 1, Qt.DashLine))
        item.addItem(chance)
        self.bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.6, brushes=[], pen=None)
        none = np.zeros(0)
        self.errors = pg.ErrorBarItem(
            x=none, y=none, left=none, right=none, beam=0.25, pen=pen(MUTED, 1.5)
        )
        item.addItem(self.bars)
        item.addItem(self.errors)
        self.words: list[pg.TextItem] = []
        self.empty = empty_text(item, "Run to see each signal's AUROC")
        item.setRange(xRange=UNIT_X, yRange=(-0.5, 0.5), padding=0)
        self.drawn: list[tuple[str, float | None]] = []  # (key, auroc) per signal, in order
        self.intervals: list[tuple[str, float, float]] = []  # (key, low, high) drawn

    def show_result(self, result, chosen: str = "") -> None:
        item = self.getPlotItem()
        for text in self.words:
            item.removeItem(text)
        self.words = []
        signals = list(result.signals) if result is not None else []
        self.drawn = [(s.key, s.auroc) for s in signals]
        ys = [len(signals) - 1 - i for i in range(len(signals))]  # the first on top
        self.bars.setOpts(
            x0=[0.0] * len(signals),
            y=ys,
            width=[s.auroc or 0.0 for s in signals],
            brushes=[CHOSEN if s.key == chosen else RAW for s in signals],
        )
        spans = [
            (y, s)
            for y, s in zip(ys, signals, strict=True)
            if s.auroc is not None and s.auroc_low is not None and s.auroc_high is not None
        ]
        self.intervals = [(s.key, s.auroc_low, s.auroc_high) for _y, s in spans]
        self.errors.setData(
            x=np.array([s.auroc for _y, s in spans], dtype=float),
            y=np.array([y for y, _s in spans], dtype=float),
            left=np.array([s.auroc - s.auroc_low for _y, s in spans], dtype=float),
            right=np.array([s.auroc_high - s.auroc for _y, s in spans], dtype=float),
        )
        for y, s in zip(ys, signals, strict=True):
            if s.auroc is None:
                word = "undefined: constant on this set" if not s.informative else "undefined"
                text = pg.TextItem(word, color=MUTED, anchor=(0.0, 0.5))
            else:  # the value inside its bar, at its start, over its interval's line
                fill = CHOSEN if s.key == chosen else RAW
                text = pg.TextItem(f"{s.auroc:.2f}", color="#ffffff", anchor=(0.0, 0.5), fill=fill)
                text.setZValue(5)
            text.setPos(0.01, y)
            item.addItem(text)
            self.words.append(text)
        ticks = [(y, short_name(s.key)) for y, s in zip(ys, signals, strict=True)]
        item.getAxis("left").setTicks([ticks])
        if not signals:
            set_title(item, self.TITLE)
        elif spans:
            set_title(item, self.TITLE, "0.5 is chance, 1 perfect · lines: 95 % interval")
        else:
            set_title(item, self.TITLE, "0.5 is chance, 1 perfect")
        show_empty(item, self.empty, not signals)
        if signals:
            item.setRange(xRange=UNIT_X, yRange=(-0.6, len(signals) - 0.4), padding=0)


class RiskCoverageChart(pg.PlotWidget):
    """Accuracy on the questions answered against the share answered, per signal."""

    TITLE = "Risk-coverage: answer only the most confident"

    def __init__(self, parent=None):
        super().__init__(parent)
        item = _fixed(self)
        style_plot(item, self.TITLE, left="accuracy on those answered", bottom="share answered")
        # the legend below the plot, never over a curve
        self.legend = legend_below(item, columns=4)
        track(item)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.empty = empty_text(item, "Run to see accuracy against coverage")
        item.setRange(xRange=UNIT_X, yRange=(-0.02, 1.04), padding=0)

    def show_result(self, result, chosen: str = "") -> None:
        item = self.getPlotItem()
        for curve in self.curves.values():
            item.removeItem(curve)
            self.legend.removeItem(curve)
        self.curves = {}
        signals = list(result.signals) if result is not None else []
        for i, s in enumerate(signals):
            if not s.coverage:
                continue
            color = CHOSEN if s.key == chosen else CURVE_COLORS[i % len(CURVE_COLORS)]
            width = 3 if s.key == chosen else 1.5
            curve = item.plot(list(s.coverage), list(s.accuracy), pen=pen(color, width))
            self.legend.addItem(curve, short_name(s.key))
            if s.key == chosen:
                curve.setZValue(10)
            self.curves[s.key] = curve
        accuracy = result.accuracy if result is not None else None
        detail = f"all answered: accuracy {accuracy:.0%}" if accuracy is not None else ""
        set_title(item, self.TITLE, detail)
        show_empty(item, self.empty, not self.curves)
        item.setRange(xRange=UNIT_X, yRange=(-0.02, 1.04), padding=0)
