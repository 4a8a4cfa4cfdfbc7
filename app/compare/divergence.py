"""The "Where the lanes diverge" chart: at one step, the shared raw distribution
(T = 1) beside each lane's sampled-from distribution, each lane's own chosen
token included. A value the engine did not record is drawn as no bar, never as
a measured zero. Before any comparison the chart is a clean empty state (a line
saying what appears there), never an empty axis."""

from __future__ import annotations

import math

import pyqtgraph as pg

from app.charts.base import empty_text, set_title, short, show_empty, style_plot

TITLE = "Where the lanes diverge"
RAW_COLOR = "#9e9e9e"
EMPTY = "Run two lanes with one prompt and model\nto see where they diverge"
NONE_DIVERGED = "No two lanes with one prompt and model\ntook different tokens"


def new_divergence_chart() -> pg.PlotWidget:
    """The chart, styled (tokens top-down), in its empty state until a comparison."""
    chart = pg.PlotWidget()
    plot = chart.getPlotItem()
    style_plot(plot, TITLE, bottom="probability (lanes: sampled from)")
    plot.invertY(True)
    draw_divergence(plot, (), 0, EMPTY)
    return chart


def _empty(plot: pg.PlotItem, message: str) -> None:
    """No bars: the message alone, no token ticks (an axis of numbers would mean nothing)."""
    set_title(plot, TITLE)
    plot.getAxis("left").setTicks([[]])
    show_empty(plot, empty_text(plot, message), True)


def draw_divergence(
    plot: pg.PlotItem, lanes, step: int, empty: str = NONE_DIVERGED
) -> tuple[dict, list[int]]:
    """Draw `lanes` (CompareLanes: their runs and colours) at `step` on `plot`; with
    none, the `empty` message.

    Returns:
        ({series name: bar widths, NaN where unknown}, the token ids on the axis).
    """
    plot.clear()
    lanes = [x for x in lanes if step < x.state.n]
    recs = [x.state.tokens[step] for x in lanes]
    if not recs:
        _empty(plot, empty)
        return {}, []
    ids, labels = [], []
    for r in recs:  # each lane's own chosen token first, then the top candidates
        for tid, text in [(r.token_id, r.label)] + [(c.token_id, c.text) for c in r.top[:6]]:
            if tid not in ids:
                ids.append(tid)
                labels.append(text)
    # Same model and the same tokens before this step: one raw distribution.
    raw = {}
    for r in recs:
        raw.update({c.token_id: math.exp(c.logprob) for c in r.top})
        raw.setdefault(r.token_id, r.prob)
    series = [("raw (T=1)", RAW_COLOR, raw.get)]
    for x, r in zip(lanes, recs, strict=True):
        series.append((f"Lane {chr(65 + x.index)} sampled from", x.color, r.sampled_prob_of))
    bars, height = {}, 0.8 / (len(recs) + 1)
    for k, (name, color, prob_of) in enumerate(series):
        widths = [math.nan if (w := prob_of(i)) is None else w for i in ids]
        plot.addItem(
            pg.BarGraphItem(
                x0=[0] * len(ids),
                y=[j - 0.4 + height * (k + 0.5) for j in range(len(ids))],
                height=height,
                width=[0.0 if math.isnan(w) else w for w in widths],
                brush=color,
                pen=None,
                name=name,
            )
        )
        bars[name] = widths
    plot.getAxis("left").setTicks([[(j, short(t)) for j, t in enumerate(labels)]])
    chosen = ", ".join(
        f"{chr(65 + x.index)} {short(r.label, 8)!r}" for x, r in zip(lanes, recs, strict=True)
    )
    key = " ".join(
        f"<span style='color:{color}'>■ {_short_series(name)}</span>" for name, color, _f in series
    )
    set_title(plot, TITLE, f"step {step}: {chosen}<br>{key}")
    widest = max([w for ws in bars.values() for w in ws if not math.isnan(w)] + [0.05])
    plot.setRange(xRange=(0, widest * 1.05), yRange=(-0.6, len(ids) - 0.4), padding=0)
    return bars, ids


def _short_series(name: str) -> str:
    """'Lane B sampled from' -> 'B', 'raw (T=1)' -> 'raw': a key that fits a narrow chart."""
    return name.removesuffix(" sampled from").removeprefix("Lane ").replace(" (T=1)", "")
