"""Charts inside the other scrolling panes (Inside's journey, Compare's lanes) take no
zoom from the wheel and, over their axes too, let it scroll the pane."""

from __future__ import annotations

from app.inside.journey_view import JourneyView
from tests.app.test_compare_lanes import window
from tests.app.test_lab_wheel import _ranges, _turn


def _over_axis(chart):
    return chart.mapFromScene(chart.getPlotItem().getAxis("left").sceneBoundingRect().center())


def test_the_wheel_over_a_journey_charts_axis_scrolls_the_journey(qtbot):
    view = JourneyView()
    qtbot.addWidget(view)
    view.resize(500, 300)
    view.show()
    qtbot.waitExposed(view)
    bar = view.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == 0
    before = _ranges(view.strip)
    _turn(view.strip, _over_axis(view.strip))
    assert bar.value() > 0 and _ranges(view.strip) == before


def test_the_wheel_over_a_lanes_strip_scrolls_the_lanes(qtbot):
    win, _bridge, c = window(qtbot)
    c.set_lane_count(4)
    win.resize(900, 500)  # narrow: two lanes a row, the lanes' area scrolls
    win.show()
    qtbot.waitExposed(win)
    bar = win.lane_scroll.verticalScrollBar()
    assert bar.maximum() > 0
    bar.setValue(0)
    strip = win.lanes[0].strip
    before = _ranges(strip)
    _turn(strip, _over_axis(strip))
    assert bar.value() > 0 and _ranges(strip) == before
