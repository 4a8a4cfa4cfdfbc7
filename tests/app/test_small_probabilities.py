"""Small things that were wrong on screen: a probability under 0.1 % read "p=0.0%" (it
keeps its significant digits now, through engine.display.units.fmt_prob everywhere), Inside ▸
Journey's rank axis said "0.9" and crowded 6 7 8 9 (ranks are whole: 1, 10, 100…), the
funnel's axis ran "1,00010,000" together, and the empty-chart message was in a serif
font (QFont("") is no family: the application's font is)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontInfo, QGuiApplication

from app.charts.base import empty_text, style_plot
from engine.run.records import TokenRecord, TopToken
from tests.app.test_legibility import _drawn_labels, _overlapping, _settle

TOP = [(" strikes", 0.29), (" is", 0.2), (" can", 0.1), (" was", 0.08)]


def _read_record(p: float = 0.000085, rank: int = 803) -> TokenRecord:
    top = tuple(TopToken(10 + i, t, math.log(q)) for i, (t, q) in enumerate(TOP))
    return TokenRecord(
        2, 1039, " never", math.log(p), p, math.log(p), top, top, 4.0, 4.0, 0.1, 0.1, 4,
        sampled_probs=tuple(q for _t, q in TOP), rank=rank, read=True,
    )  # fmt: skip


def test_a_tiny_probability_shows_its_digits_in_the_chart_and_the_tooltip(qtbot):
    from app.charts.distribution import DistributionChart
    from app.widgets.token_view import alternatives_html

    record = _read_record()
    chart = DistributionChart()
    qtbot.addWidget(chart)
    chart.show_record(record)
    title = chart.getPlotItem().titleLabel.text
    assert "(p=0.0085%, rank 803)" in title and "0.0%" not in title
    # the read token, below the candidates, is a bar of its own at its p
    i = chart.token_ids.index(record.token_id)
    assert abs(chart.raw_probs[i] - record.prob) < 1e-12
    tip = alternatives_html(record)
    assert "p=0.0085%" in tip and "rank 803" in tip
    assert "29.0%" in tip  # from 0.1 % up: one decimal, as before


def _rank_labels(view) -> list[str]:
    return [text for _rect, text in _drawn_labels(view.lens.getPlotItem().getAxis("left"))]


def test_the_journeys_rank_axis_is_whole_decades_and_the_funnels_labels_stand_apart(qtbot):
    from app.inside.journey_view import JourneyView
    from engine.inside.inside_results import FunnelStage, Projection

    view = JourneyView()
    qtbot.addWidget(view)
    _settle(qtbot, view, (1200, 900))
    names = {"1039": " never", "10": " strikes"}
    for ranks in ([803, 640, 200, 41, 9, 8, 7, 6, 2, 1], [1, 1, 1], [2, 3, 1], [40_000, 5]):
        proj = Projection.from_dict(
            {
                "top": [(10, 12.0, 0.29)],
                "chosen": {"token_id": 1039, "logit": 3.1, "prob": 0.000085, "rank": 803},
                "lens": [{"top": 10, "chosen_rank": r, "chosen_prob": 0.1} for r in ranks],
            }
        )
        view._projection(proj, names)
        qtbot.wait(30)
        axis = view.lens.getPlotItem().getAxis("left")
        drawn = _drawn_labels(axis)
        labels = [text for _rect, text in drawn]
        # only powers of ten, from 1 to the decade at or above the largest rank
        top = math.ceil(math.log10(max(ranks)))
        want = {f"{10**k:,}" for k in range(max(top, 1) + 1)}
        assert set(labels) <= want and "1" in labels, (ranks, labels)
        assert f"{10 ** max(top, 1):,}" in labels or len(labels) >= 2
        assert not _overlapping(drawn), (ranks, labels)
        lo, hi = view.lens.getPlotItem().viewRange()[1]
        assert lo <= 0 and hi >= math.log10(max(ranks))  # every rank is on the chart
        x, y = view.lens_curve.getData()
        assert np.allclose(10**y, ranks)  # the points at their ranks (log axis)
    assert "p = 0.0085%, rank 803" in view.proj_text.text()

    stages = tuple(
        FunnelStage(s, "", n, 1.0, chosen_prob=0.1, chosen_rank=1)
        for s, n in (("raw", 49_152), ("top-k", 1_000), ("top-p", 37), ("min-p", 1))
    )
    every = {"1", "10", "100", "1k", "10k"}  # 1 to 49,152 tokens: short, apart
    for width in (1200, 900, 700, 560, 420):
        _settle(qtbot, view, (width, 900))
        view.funnel_chart.show_stages(stages)
        qtbot.wait(30)
        drawn = _drawn_labels(view.funnel_chart.getPlotItem().getAxis("bottom"))
        labels = [text for _rect, text in drawn]
        assert not _overlapping(drawn), (width, labels)
        # where there is room every decade is named; a narrow chart names every other
        assert set(labels) == every if width >= 700 else {"1", "100", "10k"} <= set(labels)


def test_the_empty_chart_message_is_in_the_applications_font(qtbot):
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    style_plot(widget.getPlotItem(), "A chart")
    item = empty_text(widget.getPlotItem(), "Run a prompt to see what it shows")
    font = item.textItem.font()
    app_font = QGuiApplication.font()
    assert font.pointSize() == 9
    assert font.family() == app_font.family()
    assert QFontInfo(font).family() == QFontInfo(app_font).family()  # as drawn
