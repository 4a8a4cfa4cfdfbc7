"""Prefill vs decode against the hardware: achieved memory bandwidth per decode
step and achieved FLOP/s during prefill, each against the device's limit."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from app.charts.base import empty_text, pen, set_title, show_empty, style_plot
from app.core.theme import CHOSEN, OUTPUT, PROMPT
from engine.machine.hardware_timeline import Timeline, versus


class HardwareView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.decode = pg.PlotWidget()
        d = self.decode.getPlotItem()
        style_plot(d, "Decode: memory bandwidth per step", left="GB/s", bottom="step")
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.8, brush=OUTPUT, pen=None)
        d.addItem(self.bars)
        self.mem_limit = pg.InfiniteLine(
            angle=0,
            pen=pen(CHOSEN, 2, Qt.DashLine),
            label="device limit",
            labelOpts={"color": CHOSEN},
        )
        d.addItem(self.mem_limit)
        self.d_empty = empty_text(d, "Run a prompt to see decode against the hardware")
        self.prefill = pg.PlotWidget()
        p = self.prefill.getPlotItem()
        style_plot(p, "Prefill: compute", left="GFLOP/s")
        self.p_bars = pg.BarGraphItem(
            x=[0, 1], height=[0, 0], width=0.6, brushes=[PROMPT, "#cccccc"], pen=None
        )
        p.addItem(self.p_bars)
        p.getAxis("bottom").setTicks([[(0, "achieved"), (1, "limit (estimate)")]])
        self.p_empty = empty_text(p, "Run a prompt to see prefill against the hardware")
        self.note = QLabel()
        self.note.setWordWrap(True)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.decode)
        split.addWidget(self.prefill)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split, 1)
        layout.addWidget(self.note)
        self.show_timeline(Timeline())

    def show_timeline(self, t: Timeline) -> None:
        d, p = self.decode.getPlotItem(), self.prefill.getPlotItem()
        has_decode, has_prefill = bool(t.steps), t.prefill_gflops is not None
        show_empty(d, self.d_empty, not has_decode)
        show_empty(p, self.p_empty, not has_prefill)
        self.bars.setOpts(x=np.array(t.steps), height=np.array(t.step_gbs), width=0.8)
        self.mem_limit.setVisible(bool(t.memory_gbs) and has_decode)
        if t.memory_gbs:
            self.mem_limit.setPos(t.memory_gbs)
        if has_decode:
            top = max(max(t.step_gbs), t.memory_gbs or 0) * 1.1
            d.setRange(xRange=(min(t.steps) - 1, max(t.steps) + 1), yRange=(0, top), padding=0)
            share = f" = {t.mean_gbs / t.memory_gbs:.0%} of the limit" if t.memory_gbs else ""
            set_title(
                d,
                "Decode: memory bandwidth per step",
                f"mean {t.mean_gbs:.1f} GB/s{share} · "
                f"{(t.step_bytes[0]) / 1e6:,.0f} MB read per token",
            )
        if has_prefill:
            limit = t.matmul_gflops or 0
            self.p_bars.setOpts(x=[0, 1], height=[t.prefill_gflops, limit])
            p.setRange(
                xRange=(-0.6, 1.6), yRange=(0, max(t.prefill_gflops, limit) * 1.1), padding=0
            )
            above = bool(limit) and t.prefill_gflops > limit  # never drawn so silently
            share = f" = {t.prefill_gflops / limit:.0%}" if limit and not above else ""
            set_title(
                p,
                "Prefill: compute",
                f"{versus(t.prefill_gflops, limit, 'GFLOP/s', '.1f')}{share}<br>"
                f"{t.prefill_tokens} tokens",  # two short lines: a long title clips the plot
            )
        self.note.setText(self._explain(t))

    @staticmethod
    def _explain(t: Timeline) -> str:
        lines = [
            "Decode reads every weight once per token (plus the KV cache so far): it is "
            "limited by memory bandwidth. Prefill processes the whole prompt at once, "
            "about 2 × parameters FLOPs per token: it is limited by compute.",
        ]
        if t.weight_bytes:
            kv = (
                f", KV cache {t.kv_bytes_per_token:,.0f} bytes per token"
                if (t.kv_bytes_per_token)
                else ""
            )
            params = f"{t.parameters / 1e6:,.0f} M parameters, " if t.parameters else ""
            lines.append(
                f"Model: {params}{t.weight_bytes / 1e6:,.0f} MB of weights as they run{kv}."
            )
        if t.compute:  # which path those weights took, and the figures that chose it
            lines.append(f"Compute path: {t.compute.rstrip('.')}.")
        if t.limits_source:  # either limit may be unknown (a run made on another machine)
            mem = f"{t.memory_gbs:.0f} GB/s" if t.memory_gbs else "memory not measured"
            flops = f"{t.matmul_gflops:,.0f} GFLOP/s" if t.matmul_gflops else "compute not measured"
            lines.append(f"Device limits ({mem}, {flops}): {t.limits_source}.")
        lines += t.missing
        return "  ".join(lines)
