"""Throughput over the run: decode tokens/s against time, the prefill phase
shaded, time to first token marked, and the selected step's time (a vertical
line; its rolling rate in the title) so the chart follows the step the person
clicked, like every other chart.

A branch (or a sampled future) draws only the steps it generated: the steps it
inherited from its parent (engine/run/run_kind.py) were copied in at 0 s, not timed."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.charts.base import empty_text, pen, set_title, show_empty, style_plot, view_point
from app.core.theme import CHOSEN, OUTPUT, PROMPT
from app.session.run_state import RunState
from engine.display.units import fmt_or_na
from engine.run.run_kind import first_generated_step
from engine.run.series import rolling_tps, streaming_figures

UNTIMED = "This run's speed was not measured\n(its answer was decoded in a batch)"


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
            angle=90,
            pen=pen(CHOSEN, 1, Qt.DashLine),
            label="TTFT",
            labelOpts={"position": 0.9, "color": CHOSEN},
        )
        plot.addItem(self.ttft_line)
        self.step_line = pg.InfiniteLine(angle=90, pen=pen(CHOSEN, 1, Qt.DotLine))
        plot.addItem(self.step_line)
        self.prefill_label = pg.TextItem("prefill", color=PROMPT, anchor=(0, 0))
        plot.addItem(self.prefill_label)
        self.empty = empty_text(plot, "Run a prompt to see prefill and decode speed")
        self.tps = np.zeros(0)
        self.times = np.zeros(0)
        self.first = 0  # the step `times[0]` is: a branch's first generated step
        self.update_from(RunState())

    def update_from(self, state: RunState) -> None:
        if getattr(state, "reading", False):
            self._show_read(state)
            return
        if not state.remote and not state.can("timings"):
            self._show_untimed()
            return
        n = state.n
        empty = n == 0 and state.prefill is None
        show_empty(self.getPlotItem(), self.empty, empty, x=(0, 1), y=(0, 10))
        self.prefill_label.setVisible(not empty)
        live_ttft, live_tps = streaming_figures(state.tokens, state.branch)
        ttft = state.done.ttft_s if state.done else None
        if ttft is None:
            ttft = live_ttft
        prefill_end = (
            ttft if ttft is not None else (state.prefill.elapsed_s if state.prefill else 0)
        )
        self.prefill_region.setRegion((0, prefill_end))
        self.ttft_line.setVisible(ttft is not None)
        if ttft is not None:
            self.ttft_line.setValue(ttft)
            self.ttft_line.label.setFormat(f"TTFT {ttft:.2f}s")
        self.first = min(first_generated_step(state.branch), n)
        t = state.elapsed[self.first : n]  # the steps this run generated
        self.times = np.array(t)
        self.tps = rolling_tps(t)
        self.curve.setData(t, self.tps, connect="finite")
        finite = np.isfinite(self.tps).any()
        top = float(np.nanmax(self.tps)) * 1.2 if len(t) > 1 and finite else 10.0
        self.prefill_label.setPos(0, top)
        if not empty:
            right = max(float(t[-1]) if len(t) else 0, prefill_end, 1.0)
            self.getPlotItem().setRange(xRange=(0, right), yRange=(0, top), padding=0.03)
            # A short prefill leaves no room for its word beside the TTFT label.
            self.prefill_label.setVisible(ttft is None or prefill_end > 0.2 * right)
        tps = state.done.decode_tps if state.done else live_tps
        detail = "no run yet" if empty else f"decode {fmt_or_na(tps, '.1f', 'tok/s')}"
        if state.done is not None and state.done.timings_from == "client":
            detail += " · curve as received"  # the server reports no timings of its own
        elif state.done is not None and state.done.timings_from == "server":
            detail += " (server's figure)"
        detail += self._mark_step(state)
        set_title(self.getPlotItem(), "Throughput", detail)

    def _show_read(self, state: RunState) -> None:
        """A text read through the model is scored in chunks: nothing is decoded, so the
        chart says what the read took instead of drawing a decode curve."""
        self.times, self.tps = np.zeros(0), np.zeros(0)
        self.curve.setData([], [])
        self.prefill_region.setRegion((0, 0))
        self.ttft_line.setVisible(False)
        self.prefill_label.setVisible(False)
        summary = state.done.reading if state.done is not None else None
        if summary is not None and summary.read_tps:
            detail = f"read {summary.tokens:,} tokens in {summary.read_s:,.1f} s"
            speed = f"{summary.read_tps:,.1f} tok/s"
        else:
            detail, speed = f"reading… {state.n:,} tokens", "…"
        message = f"A read scores the text in chunks:\nno decode to draw · {speed}"
        show_empty(self.getPlotItem(), self.empty, True, x=(0, 1), y=(0, 10), message=message)
        set_title(self.getPlotItem(), "Throughput", detail)

    def _show_untimed(self) -> None:
        """A local run whose model does not claim timings (a Lab answer journaled from a
        batched pass, engine/backends/mlx/calibrate_runs.py): its records' times are not its
        decoding's, so no curve is drawn and the chart says so."""
        self.times, self.tps = np.zeros(0), np.zeros(0)
        self.curve.setData([], [])
        self.prefill_region.setRegion((0, 0))
        self.ttft_line.setVisible(False)
        self.step_line.setVisible(False)
        self.prefill_label.setVisible(False)
        show_empty(self.getPlotItem(), self.empty, True, x=(0, 1), y=(0, 10), message=UNTIMED)
        set_title(self.getPlotItem(), "Throughput", "not measured for this run")

    def _mark_step(self, state: RunState) -> str:
        """The selected step's time marked; ' · step N at t s: R tok/s' for the title
        ('' when following the latest token)."""
        step = state.selected if state.selected is not None and state.selected < state.n else None
        own = step is not None and step >= self.first
        self.step_line.setVisible(own)
        if step is None:
            return ""
        if not own:
            return f" · step {step}: the parent run's, not timed in this branch"
        t = float(self.times[step - self.first])
        self.step_line.setValue(t)
        rate = self.tps[step - self.first]
        speed = "first token" if np.isnan(rate) else f"{rate:.1f} tok/s"
        return f" · step {step} at {t:.2f} s: {speed}"

    def readout(self, scene_pos) -> str | None:
        """The step nearest the time under the cursor, and the rolling speed there."""
        p = view_point(self.getPlotItem(), scene_pos)
        if p is None or not len(self.times):
            return None
        k = int(np.argmin(np.abs(self.times - p.x())))
        rate = self.tps[k]
        speed = "first token (no speed yet)" if np.isnan(rate) else f"{rate:.1f} tok/s (last 8)"
        return f"t={self.times[k]:.2f} s · step {self.first + k} · {speed}"
