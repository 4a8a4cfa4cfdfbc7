"""Small things that were wrong on screen: a probability under 0.1 % read "p=0.0%" (it
keeps its significant digits now, through engine.units.fmt_prob everywhere)."""

from __future__ import annotations

import math

from engine.records import TokenRecord, TopToken

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
