"""Next-token distribution at the current/selected step: top-k candidates as
horizontal bars, the model's raw distribution (T=1) beside the one sampled from."""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg

from app.charts.base import set_title, short, style_plot
from app.theme import CHOSEN, RAW, SAMPLED
from engine.records import TokenRecord, TopToken

BAR = 0.38


class DistributionChart(pg.PlotWidget):
    def __init__(self, parent=None, max_bars: int = 10):
        super().__init__(parent)
        self.max_bars = max_bars
        plot = self.getPlotItem()
        style_plot(plot, "Next-token distribution", bottom="probability")
        plot.invertY(True)
        plot.setMouseEnabled(x=False, y=False)
        self.raw_bars = pg.BarGraphItem(x0=[], y=[], height=BAR, width=[], brush=RAW, pen=None)
        self.sampled_bars = pg.BarGraphItem(
            x0=[], y=[], height=BAR, width=[], brush=SAMPLED, pen=None
        )
        self.chosen_mark = pg.ScatterPlotItem(symbol="t2", size=11, brush=CHOSEN, pen=None)
        for item in (self.raw_bars, self.sampled_bars, self.chosen_mark):
            plot.addItem(item)
        legend = plot.addLegend(offset=(-8, -8), labelTextSize="8pt")  # bottom right: short bars
        legend.addItem(self.raw_bars, "raw (T=1)")
        legend.addItem(self.sampled_bars, "sampled from")
        legend.addItem(self.chosen_mark, "chosen")
        self.labels: list[str] = []
        self.raw_probs = np.zeros(0)
        self.sampled_probs = np.zeros(0)
        self.token_ids: list[int] = []

    def show_record(self, record: TokenRecord | None) -> None:
        plot = self.getPlotItem()
        if record is None:
            self._set([], [], [], [])
            set_title(plot, "Next-token distribution", "no step yet")
            return
        cands = list(record.top[: self.max_bars])
        if record.token_id not in {c.token_id for c in cands}:
            cands.append(TopToken(record.token_id, record.label, record.logprob))
        ids = [c.token_id for c in cands]
        raw = [math.exp(c.logprob) for c in cands]
        # The record's own sampled-from values; NaN (no bar, marked "?") where unknown.
        samp = [record.sampled_prob_of(i) for i in ids]
        samp = [math.nan if p is None else p for p in samp]
        self._set(ids, [c.text for c in cands], raw, samp)
        chosen = ids.index(record.token_id)
        x = max(raw[chosen], 0.0 if math.isnan(samp[chosen]) else samp[chosen])
        self.chosen_mark.setData([x + 0.02], [chosen])
        unknown = sum(math.isnan(p) for p in samp)
        note = f" · sampled-from not recorded for {unknown}" if unknown else ""
        set_title(
            plot,
            "Next-token distribution",
            f"step {record.step} · chose {html.escape(repr(short(record.label)))} "
            f"(p={record.prob:.1%}){note}",
        )

    def _set(self, ids, texts, raw, samp) -> None:
        n = len(ids)
        y = np.arange(n, dtype=float)
        self.token_ids = list(ids)
        self.raw_probs, self.sampled_probs = np.asarray(raw), np.asarray(samp)
        self.labels = [short(t) for t in texts]
        self.raw_bars.setOpts(x0=np.zeros(n), y=y - BAR / 2, width=self.raw_probs)
        self.sampled_bars.setOpts(x0=np.zeros(n), y=y + BAR / 2,
                                  width=np.nan_to_num(self.sampled_probs, nan=0.0))  # fmt: skip
        if n == 0:
            self.chosen_mark.setData([], [])
        axis = self.getPlotItem().getAxis("left")
        axis.setTicks([[(i, label) for i, label in enumerate(self.labels)]])
        top = max([*raw, *[p for p in samp if not math.isnan(p)], 0.05])
        self.getPlotItem().setRange(  # room for the chosen marker even at p = 1
            xRange=(0, top * 1.08 + 0.06), yRange=(-0.7, max(n, 1) - 0.3), padding=0
        )
