"""Batching: the same prompts at batch sizes 1, 2, 4, 8. Total tokens/s
rises with the batch (decode reads the weights once per step for every sequence
in it) while each sequence's own speed falls: why servers batch."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget

from app.charts.base import pen, set_title, style_plot
from app.core.theme import CHOSEN, OUTPUT, PROMPT
from engine.lab import BatchParams, BatchResult

DEFAULT = BatchParams()


class BatchView(QWidget):
    run_requested = Signal()  # the window asks `params()` and runs them

    def __init__(self, parent=None):
        super().__init__(parent)
        self.tokens = QSpinBox()
        self.tokens.setRange(4, 128)
        self.tokens.setValue(DEFAULT.tokens)
        self.tokens.setToolTip("Answer tokens per prompt (greedy)")
        self.run = QPushButton(f"Run batch sizes {', '.join(map(str, DEFAULT.sizes))}")
        self.run.setToolTip(
            "Eight short prompts, answered at each batch size (mlx-lm's "
            "batch_generate), timed in the engine"
        )
        bar = QHBoxLayout()
        for w in (QLabel("Answer tokens"), self.tokens, self.run):
            bar.addWidget(w)
        bar.addStretch(1)
        self.summary = QLabel("Run to see throughput against batch size.")
        self.summary.setWordWrap(True)
        self.chart = pg.PlotWidget()
        item = self.chart.getPlotItem()
        style_plot(item, "Throughput against batch size", left="tokens/s", bottom="batch size")
        item.addLegend(offset=(10, 10))
        item.setLogMode(y=True)  # the ceiling and the measured speeds differ by 10x and more
        item.getAxis("left").setTicks(
            [[(np.log10(v), f"{v:g}") for v in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)]]
        )
        self.total = item.plot(
            [], [], pen=pen(OUTPUT, 2), symbol="o", symbolBrush=OUTPUT, name="total tokens/s"
        )
        self.per_seq = item.plot(
            [], [], pen=pen(PROMPT, 2), symbol="s", symbolBrush=PROMPT, name="per sequence"
        )
        self.ceiling = item.plot(
            [], [], pen=pen(CHOSEN, 2, Qt.DashLine), name="device ceiling (bandwidth, then compute)"
        )
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(self.chart, 1)
        self.run.clicked.connect(self.run_requested.emit)

    def params(self) -> BatchParams:
        """The experiment's parameters as chosen on screen."""
        return BatchParams(DEFAULT.sizes, self.tokens.value())

    def show_result(self, result: BatchResult) -> None:
        rows = result.rows
        sizes = np.array([r.batch_size for r in rows], dtype=float)
        self.total.setData(sizes, [r.total_tps for r in rows])
        self.per_seq.setData(sizes, [r.per_sequence_tps for r in rows])
        ceiling = result.ceiling
        self.ceiling.setData([c.batch_size for c in ceiling], [c.tps for c in ceiling])
        item = self.chart.getPlotItem()
        values = [r.total_tps for r in rows] + [c.tps for c in ceiling]
        low = min(r.per_sequence_tps for r in rows)
        item.setRange(
            yRange=(np.log10(low * 0.7), np.log10(max(values) * 1.5)),
            xRange=(0.5, sizes.max() + 0.5),
            padding=0,
        )
        first, last = rows[0], rows[-1]
        gain = last.total_tps / first.total_tps
        set_title(
            item,
            "Throughput against batch size",
            f"batch {last.batch_size}: {gain:.1f}× the total tokens/s of batch "
            f"{first.batch_size}, each sequence {last.per_sequence_tps:.1f} tok/s",
        )
        same = all(result.unbatched_equal.values())
        memory = ", ".join(f"{r.batch_size}: {r.peak_memory_bytes / 1e6:,.0f} MB" for r in rows)
        source = f" Ceiling: {result.ceiling_source}." if result.ceiling_source else ""
        self.summary.setText(
            f"{len(result.prompts)} prompts, {first.generated_tokens} answer tokens at each "
            f"size. Every batched answer equals the unbatched one: {'yes' if same else 'NO'}. "
            f"Peak memory by batch size: {memory}.{source}"
        )
