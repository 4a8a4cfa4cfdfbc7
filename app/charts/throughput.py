"""Throughput over the run: decode tokens/s against time, the prefill phase
shaded, time to first token marked."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.charts.base import pen, set_title, style_plot
from app.run_state import RunState
from app.theme import CHOSEN, OUTPUT, PROMPT
from engine.series import decode_rate, rolling_tps
from engine.units import fmt_or_na


class ThroughputChart(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        plot = self.getPlotItem()
        style_plot(plot, "Throughput", left="tokens/s", bottom="seconds since Run")
        plot.setClipToView(True)
        self.prefill_region = pg.LinearRegionItem(
            values=(0, 0), movable=False, brush=pg.mkBrush(76, 120, 168, 50), pen=pg.mkPen(None)
        )
        plot.addItem(self.prefill_region)
        self.curve = plot.plot(pen=pen(OUTPUT, 1.5), name="decode tok/s")
        self.ttft_line = pg.InfiniteLine(
            angle=90, pen=pen(CHOSEN, 1, Qt.DashLine), label="TTFT",
            labelOpts={"position": 0.9, "color": CHOSEN},
        )  # fmt: skip
        plot.addItem(self.ttft_line)
        self.prefill_label = pg.TextItem("prefill", color=PROMPT, anchor=(0, 0))
        plot.addItem(self.prefill_label)
        self.tps = np.zeros(0)

    def update_from(self, state: RunState) -> None:
        n = state.n
        ttft = state.done.ttft_s if state.done else None
        if ttft is None and n:
            ttft = state.tokens[0].elapsed_s
        prefill_end = (
            ttft if ttft is not None else (state.prefill.elapsed_s if state.prefill else 0)
        )
        self.prefill_region.setRegion((0, prefill_end))
        self.ttft_line.setVisible(ttft is not None)
        if ttft is not None:
            self.ttft_line.setValue(ttft)
            self.ttft_line.label.setFormat(f"TTFT {ttft:.2f}s")
        t = state.elapsed[:n]
        self.tps = rolling_tps(t)
        self.curve.setData(t, self.tps, connect="finite")
        top = float(np.nanmax(self.tps)) * 1.2 if n > 1 else 10.0
        self.prefill_label.setPos(0, top)
        self.getPlotItem().setRange(xRange=(0, max(float(t[-1]) if n else 0, prefill_end, 1.0)),
                                    yRange=(0, top), padding=0.03)  # fmt: skip
        tps = state.done.decode_tps if state.done else decode_rate(t)
        set_title(self.getPlotItem(), "Throughput", f"decode {fmt_or_na(tps, '.1f', 'tok/s')}")
