"""Charts take their labels' room from their content: a long title (the temperature
chart's key of long token names) wraps, and no axis or range is clipped at any width."""

from __future__ import annotations

import numpy as np
import pytest

from app.charts.panel import ChartsPanel
from engine.run.records import SWEEP_TEMPERATURES, TokenRecord, TopToken

LONG = (" unquestionably", " Constantinople", "WWWWWWWWWWW", " international", " antidisestab")


def long_named_record() -> TokenRecord:
    lps = np.log(np.array([0.35, 0.25, 0.15, 0.1, 0.05]))
    top = tuple(
        TopToken(i, name, float(lp)) for i, (name, lp) in enumerate(zip(LONG, lps, strict=True))
    )
    z = lps[None, :] / np.array(SWEEP_TEMPERATURES)[:, None]  # (T, 5)
    logz = np.logaddexp.reduce(z, axis=1)
    p = np.exp(z - logz[:, None])
    h = -(p * np.log(p)).sum(axis=1)
    return TokenRecord(
        step=3,
        token_id=0,
        text=LONG[0],
        logprob=float(lps[0]),
        prob=0.35,
        sampled_logprob=None,
        top=top,
        sampled_top=(),
        entropy=float(h[9]),
        sampled_entropy=None,
        elapsed_s=0.1,
        latency_s=0.01,
        context_tokens=9,
        sweep_logz=tuple(logz),
        sweep_entropy=tuple(h),
    )


@pytest.mark.parametrize("panel_width", [1100, 900, 640, 480])
def test_temperature_chart_keeps_its_axes_and_range_with_long_token_names(qtbot, panel_width):
    panel = ChartsPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.resize(panel_width, 900)
    qtbot.wait(20)
    chart = panel.temp
    if panel.columns == 0:  # tabs: only the current tab's chart is shown (and laid out)
        panel.tabs.setCurrentWidget(panel.frames["temp"])
    chart.show_record(long_named_record())
    chart.set_temperature(0.7)
    plot = chart.getPlotItem()

    def fits() -> None:  # asserted once the layout has settled
        assert plot.geometry().width() <= chart.width()
        right = plot.mapRectToScene(plot.getAxis("right").geometry())  # without grid lines
        assert right.right() <= chart.width() and right.width() > 20  # entropy axis, labelled
        view = plot.vb.sceneBoundingRect()
        assert view.left() >= 0 and view.right() <= right.left() + 1
        assert np.allclose(plot.vb.viewRange()[0], (0.0, 2.0), atol=0.05)  # T 0..2 all shown
        title = plot.titleLabel.item.sceneBoundingRect()
        assert title.left() >= 0 and title.right() <= chart.width()
        assert title.top() >= 0 and title.bottom() <= view.top() + 1  # the whole key shows

    qtbot.waitUntil(fits, timeout=2_000)
    names = chart.key_names()  # as long as the chart's width allows (test_legibility.py)
    assert all(f"■&nbsp;{name}" in plot.titleLabel.text for name in names)
    assert "␣Cons" in names[1] and "entropy" in plot.titleLabel.text


def test_a_new_title_of_the_same_height_keeps_its_row(qtbot):
    """pyqtgraph's setTitle puts the row back to 30 px; a title as tall as the last one
    (same cached height) must still get its row back, or its first line is cut."""
    import pyqtgraph as pg

    from app.charts.base import set_title

    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    widget.resize(290, 210)
    widget.show()
    plot = widget.getPlotItem()
    for detail in (
        "step 1 · chose ' a'<br>■ raw ■ sampled",
        "step 2 · chose ' b'<br>■ raw ■ sampled",
    ):
        set_title(plot, "Next-token distribution", detail)
        qtbot.wait(10)
        text = plot.titleLabel.item.boundingRect().height()
        assert plot.titleLabel.geometry().height() >= text > 40
