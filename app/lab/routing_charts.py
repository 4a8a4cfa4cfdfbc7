"""The Routing tab's two charts, each drawn from a RouteResult (engine/lab/routing.py) as
it is:

- the routing curve: the cascade's accuracy at every threshold against the share of
  questions escalated to the large model, the random router's straight line from the
  small model's accuracy to the large one's, the oracle's accuracy at each of those
  shares, the line at 95 % of the large model's accuracy and the cheapest point that
  keeps it (the result's `target_point`) marked;
- the cost curve: the cascade's time at each threshold as a share of the large model
  answering every question alone (the line at 1), the same point marked.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.charts.base import empty_text, legend_below, pen, set_title, show_empty, style_plot, track
from app.core.theme import CHOSEN, MUTED, RAW, SAMPLED

UNIT_X = (-0.03, 1.06)  # the share escalated, with room for the last label


def _fixed(plot: pg.PlotWidget) -> pg.PlotItem:
    item = plot.getPlotItem()
    item.setMouseEnabled(x=False, y=False)
    item.hideButtons()
    return item


def _marker(color: str) -> pg.ScatterPlotItem:
    return pg.ScatterPlotItem(size=13, symbol="star", brush=pg.mkBrush(color), pen=pen(color))


class RouteCurveChart(pg.PlotWidget):
    """Accuracy against the share escalated: the cascade, the random router, the oracle."""

    TITLE = "Routing curve"

    def __init__(self, parent=None):
        super().__init__(parent)
        item = _fixed(self)
        style_plot(item, self.TITLE, left="accuracy", bottom="share escalated to the large model")
        self.legend = legend_below(item, columns=4)
        track(item)
        self.cascade = item.plot([], [], pen=pen(RAW, 2.5), symbol="o", symbolSize=6)
        self.cascade.setSymbolBrush(RAW)
        self.random = item.plot([], [], pen=pen(MUTED, 1.5, Qt.DashLine))
        self.oracle = item.plot([], [], pen=pen(SAMPLED, 1.5, Qt.DotLine))
        self.keep = pg.InfiniteLine(angle=0, pen=pen(CHOSEN, 1, Qt.DashLine))
        self.keep.setVisible(False)
        item.addItem(self.keep)
        self.target = _marker(CHOSEN)
        item.addItem(self.target)
        self.legend.addItem(self.cascade, "cascade")
        self.legend.addItem(self.random, "random router")
        self.legend.addItem(self.oracle, "oracle")
        self.legend.addItem(self.target, "95 % point")
        self.empty = empty_text(item, "Run to see accuracy against the share escalated")
        item.setRange(xRange=UNIT_X, yRange=(-0.03, 1.06), padding=0)

    def show_result(self, r) -> None:
        """Draw `r` (a RouteResult; None: empty)."""
        item = self.getPlotItem()
        points = list(r.points) if r is not None else []
        self.cascade.setData([p.share for p in points], [p.accuracy for p in points])
        self.oracle.setData([p.share for p in points], [p.oracle_accuracy for p in points])
        if points:
            self.random.setData([0.0, 1.0], [r.small_accuracy, r.large_accuracy])
        else:
            self.random.setData([], [])
        t = r.target_point if r is not None else None
        self.target.setData([t.share] if t else [], [t.accuracy] if t else [])
        self.keep.setVisible(bool(points))
        if points:
            self.keep.setPos(r.target * r.large_accuracy)
        if not points:
            set_title(item, self.TITLE, r.why if r is not None else "")
        else:
            apgr = "undefined" if r.apgr is None else f"{r.apgr:.2f}"
            set_title(
                item,
                self.TITLE,
                f"{r.compared} questions · APGR {apgr} · dashed: {r.target:.0%} of the large "
                "model's accuracy",
            )
        show_empty(item, self.empty, not points)
        item.setRange(xRange=UNIT_X, yRange=(-0.03, 1.06), padding=0)


class CostCurveChart(pg.PlotWidget):
    """The cascade's time against the share escalated, as a share of all-large."""

    TITLE = "Cost against the large model alone"

    def __init__(self, parent=None):
        super().__init__(parent)
        item = _fixed(self)
        style_plot(
            item,
            self.TITLE,
            left="time / all-large time",
            bottom="share escalated to the large model",
        )
        self.legend = legend_below(item, columns=3)
        track(item)
        self.cost = item.plot([], [], pen=pen(RAW, 2.5), symbol="o", symbolSize=6)
        self.cost.setSymbolBrush(RAW)
        self.alone = item.plot([], [], pen=pen(MUTED, 1.5, Qt.DashLine))
        self.target = _marker(CHOSEN)
        item.addItem(self.target)
        self.legend.addItem(self.cost, "cascade")
        self.legend.addItem(self.alone, "large model alone")
        self.legend.addItem(self.target, "95 % point")
        self.empty = empty_text(item, "Run to see what the cascade costs")
        item.setRange(xRange=UNIT_X, yRange=(0, 1.2), padding=0)

    def show_result(self, r) -> None:
        """Draw `r` (a RouteResult; None: empty)."""
        item = self.getPlotItem()
        points = list(r.points) if r is not None and r.large_seconds > 0 else []
        self.cost.setData([p.share for p in points], [p.relative_cost for p in points])
        self.alone.setData([0.0, 1.0] if points else [], [1.0, 1.0] if points else [])
        t = r.target_point if points else None
        self.target.setData([t.share] if t else [], [t.relative_cost] if t else [])
        top = max([1.0, *(p.relative_cost for p in points)]) * 1.1
        if points:
            detail = f"all-large: {r.large_seconds:.1f} s · {r.energy_basis}"
            if r.saving is not None:
                detail = f"95 % point saves {r.saving:.0%} · " + detail
            set_title(item, self.TITLE, detail)
        else:
            set_title(item, self.TITLE, "")
        show_empty(item, self.empty, not points, y=(0, top))
        # a little below 0, so the axis labels its 0 (pyqtgraph drops a label at the edge)
        item.setRange(xRange=UNIT_X, yRange=(-0.04 * top, top), padding=0)
