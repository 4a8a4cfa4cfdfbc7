"""The wheel over a chart in the lab's scrolling Distillation parts scrolls the part and
never zooms the chart (a zoom made while scrolling once left a KL axis at -100,000)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QObject, QPoint, QPointF, Qt, Signal
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QScrollArea

from app.lab.distill_view import DistillView


class Bridge(QObject):
    lab_step = Signal(object)
    busy_changed = Signal(bool)
    busy = False


def _turn(chart: pg.PlotWidget, at: QPoint) -> None:
    """One notch of the wheel, towards the person, over `at` in the chart."""
    event = QWheelEvent(
        QPointF(at),
        QPointF(chart.viewport().mapToGlobal(at)),
        QPoint(0, 0),
        QPoint(0, -120),
        Qt.NoButton,
        Qt.NoModifier,
        Qt.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(chart.viewport(), event)


def _ranges(chart: pg.PlotWidget):
    return [list(r) for r in chart.getPlotItem().vb.viewRange()]


def test_the_wheel_over_a_distillation_chart_scrolls_the_part(qtbot):
    view = DistillView(Bridge())
    qtbot.addWidget(view)
    view.resize(700, 320)  # short: both parts scroll
    view.show()
    qtbot.waitExposed(view)
    for chart in (view.train.kl_chart, view.compare.chart, view.compare.teacher_bars):
        pane = next(w for w in _ancestors(chart) if isinstance(w, QScrollArea))
        bar = pane.verticalScrollBar()
        assert bar.maximum() > 0
        bar.setValue(0)
        before = _ranges(chart)
        plot_area = chart.getPlotItem().vb.sceneBoundingRect().center().toPoint()
        axis = chart.getPlotItem().getAxis("left").sceneBoundingRect().center().toPoint()
        for at in (plot_area, axis):
            _turn(chart, chart.mapFromScene(at))
        assert _ranges(chart) == before  # no zoom, over the plot or its axis
        assert bar.value() > 0  # the part scrolled


def test_the_same_turn_zooms_a_chart_outside_a_pane(qtbot):
    """The check above can fail: the turn it sends does zoom an ordinary chart."""
    chart = pg.PlotWidget()
    qtbot.addWidget(chart)
    chart.getPlotItem().plot([0, 1, 2], [0, 1, 4])
    chart.resize(400, 300)
    chart.show()
    qtbot.waitExposed(chart)
    before = _ranges(chart)
    _turn(chart, chart.mapFromScene(chart.getPlotItem().vb.sceneBoundingRect().center()))
    assert _ranges(chart) != before


def _ancestors(widget):
    while (widget := widget.parentWidget()) is not None:
        yield widget
