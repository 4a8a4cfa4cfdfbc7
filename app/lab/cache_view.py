"""Conversations and the KV cache: a conversation grows turn by turn; each turn is
run from the cache (only the new message prefilled) and cold (everything again).
The chart shows both times to first token and the KV cache's size against the
conversation's length: what reuse saves, and what every token of context costs."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import pen, set_title, style_plot
from app.core.theme import OUTPUT, PROMPT, SYSTEM
from engine.lab import WINDOW_KV_BITS, CacheParams, CacheResult

DEFAULT = CacheParams()

COLUMNS = (
    "turn",
    "prompt tokens",
    "from cache",
    "TTFT cold",
    "TTFT cached",
    "faster",
    "KV cache",
    "same tokens",
)


class CacheView(QWidget):
    run_requested = Signal()  # the window asks `params()` and runs them

    def __init__(self, parent=None):
        super().__init__(parent)
        self.turns = QSpinBox()
        self.turns.setRange(2, 12)
        self.turns.setValue(DEFAULT.turns)
        self.turns.setToolTip("Turns: the playground's prompt, then short follow-ups")
        self.tokens = QSpinBox()
        self.tokens.setRange(2, 128)
        self.tokens.setValue(DEFAULT.tokens)
        self.tokens.setToolTip("Answer tokens per turn (greedy)")
        self.run = QPushButton("Run the conversation")
        self.run.setToolTip("Each turn from the KV cache, then cold; timed in the engine")
        self.kv_compare = QCheckBox("Compare KV precision")
        self.kv_compare.setToolTip(
            "Also run the first message with a float, an 8-bit and a 4-bit KV cache: "
            "bytes, speed and each step's KL divergence from float"
        )
        bar = QHBoxLayout()
        widgets = (QLabel("Turns"), self.turns, QLabel("Answer tokens"), self.tokens)
        for w in (*widgets, self.kv_compare, self.run):
            bar.addWidget(w)
        bar.addStretch(1)
        self.summary = QLabel("Run to see what the prompt cache saves as a conversation grows.")
        self.summary.setWordWrap(True)
        self.chart = pg.PlotWidget()
        item = self.chart.getPlotItem()
        style_plot(
            item,
            "Time to first token as the conversation grows",
            left="seconds",
            bottom="prompt tokens (the conversation so far)",
        )
        item.addLegend(offset=(10, 10))
        self.cold = item.plot(
            [],
            [],
            pen=pen(OUTPUT, 2),
            symbol="o",
            symbolBrush=OUTPUT,
            name="cold: the whole prompt prefilled",
        )
        self.cached = item.plot(
            [],
            [],
            pen=pen(PROMPT, 2),
            symbol="s",
            symbolBrush=PROMPT,
            name="cached: only the new message",
        )
        self.kv = pg.ViewBox()  # KV cache megabytes on the right axis
        item.showAxis("right")
        item.scene().addItem(self.kv)
        item.getAxis("right").linkToView(self.kv)
        item.getAxis("right").setLabel("KV cache (MB)", color=SYSTEM)
        self.kv.setXLink(item)
        self.kv_line = pg.PlotDataItem([], [], pen=pen(SYSTEM, 2), symbol="t", symbolBrush=SYSTEM)
        self.kv.addItem(self.kv_line)
        item.legend.addItem(self.kv_line, "KV cache (MB, right axis)")
        item.vb.sigResized.connect(lambda: self.kv.setGeometry(item.vb.sceneBoundingRect()))
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setMaximumHeight(190)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.table)
        self.kv_summary = QLabel("")
        self.kv_summary.setWordWrap(True)
        layout.addWidget(self.kv_summary)
        self.run.clicked.connect(self.run_requested.emit)

    def params(self) -> CacheParams:
        """The experiment's parameters as chosen on screen (the window puts the
        playground's prompt in `first`)."""
        kv_bits = WINDOW_KV_BITS if self.kv_compare.isChecked() else ()
        return CacheParams(turns=self.turns.value(), tokens=self.tokens.value(), kv_bits=kv_bits)

    def show_result(self, result: CacheResult) -> None:
        self.kv_summary.setText(kv_precision_text(result.kv_precision))
        rows = result.rows
        x = [r.prompt_tokens for r in rows]
        self.cold.setData(x, [r.cold_ttft_s for r in rows])
        self.cached.setData(x, [r.cached_ttft_s for r in rows])
        self.kv_line.setData(x, [(r.kv_cache_bytes or 0) / 1e6 for r in rows])
        self.kv.enableAutoRange()
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            cells = (
                r.turn,
                r.prompt_tokens,
                r.cached_tokens,
                f"{r.cold_ttft_s:.3f} s",
                f"{r.cached_ttft_s:.3f} s",
                f"{r.speedup:.1f}×",
                f"{(r.kv_cache_bytes or 0) / 1e6:.2f} MB",
                "yes" if r.same_tokens else "NO",
            )
            for c, value in enumerate(cells):
                item = QTableWidgetItem(str(value))
                item.setToolTip(f"Turn {r.turn}: {r.message!r} → {r.answer!r}")
                self.table.setItem(i, c, item)
        self.table.resizeColumnsToContents()
        last = rows[-1]
        set_title(
            self.chart.getPlotItem(),
            "Time to first token as the conversation grows",
            f"turn {last.turn}: {last.cached_tokens} of {last.prompt_tokens} "
            f"prompt tokens from cache, {last.speedup:.1f}× faster to the first "
            "token",
        )
        worst = max(r.max_logprob_difference for r in rows)
        held = last.kv_cache_tokens or last.context_tokens - 1  # older results
        per_token = last.kv_cache_bytes / max(held, 1)
        self.summary.setText(
            f"The cold run's TTFT grows with the conversation; the cached run prefills only "
            f"the new message. Cached and cold runs chose the same tokens in "
            f"{sum(r.same_tokens for r in rows)} of {len(rows)} turns (logprobs within "
            f"{worst:.1e}). The KV cache holds {per_token:,.0f} bytes per token of "
            f"context: {last.kv_cache_bytes / 1e6:.2f} MB after {last.context_tokens:,} "
            f"tokens, of a {result.context_length:,}-token window."
        )


def kv_precision_text(rows) -> str:
    """Float vs quantized KV cache in one line per precision ('' without rows)."""
    lines = []
    for r in rows:
        name = f"{r.kv_bits}-bit" if r.kv_bits else "float"
        tps = f"{r.decode_tps:.1f} tok/s" if r.decode_tps else "decode not timed"
        kl = (
            ""
            if not r.kv_bits
            else (
                f", KL to float mean {r.mean_kl:.1e} max {r.max_kl:.1e} nats"
                f"{'' if r.same_tokens else ', another answer'}"
            )
        )
        lines.append(
            f"KV {name}: {r.bytes_per_token:,.0f} bytes per token, "
            f"{r.kv_cache_bytes / 1e6:.2f} MB, {tps}{kl}"
        )
    return "\n".join(lines)
