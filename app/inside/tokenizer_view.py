"""Tokenizer explorer: a text split into the current model's tokens (coloured
spans; id and bytes on hover), tokens per word and character, the same text under
every installed model's tokenizer, and the token economy across languages."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import set_title, style_plot
from app.core.theme import PROMPT
from app.inside.economy_cost import LOCAL, draw_cost
from engine.models.token_explorer import SAMPLES, counts_by_model, economy, split, stats

PALETTE = ("#dbeafe", "#fde68a", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa")


class TokenizerView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.tokenizer = None
        self.models: list = []
        self.prefill_tps: float | None = None
        self.context: int | None = None
        self.samples = QComboBox()
        self.samples.addItem("Samples…", None)
        for lang, text in SAMPLES.items():
            self.samples.addItem(lang, text)
        self.samples.setToolTip("The same sentence in other languages, code and emoji")
        self.text = QPlainTextEdit(SAMPLES["English"])
        self.text.setFixedHeight(70)
        self.spans = QTextBrowser()
        self.spans.setOpenLinks(False)
        self.spans.setToolTip("")
        self.summary = QLabel()
        self.by_model = QTableWidget(0, 2)
        self.by_model.setHorizontalHeaderLabels(["model", "tokens"])
        header = self.by_model.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        self.by_model.verticalHeader().hide()
        self.by_model.setToolTip("The same text under every installed model's tokenizer")
        self.chart = pg.PlotWidget()
        style_plot(self.chart.getPlotItem(), "Token economy", left="tokens vs English")
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush=PROMPT, pen=None)
        self.chart.getPlotItem().addItem(self.bars)
        self.local_bars = pg.BarGraphItem(x=[], height=[], width=0.4, brush=LOCAL, pen=None)
        self.chart.getPlotItem().addItem(self.local_bars)
        self.economy_in = QComboBox()  # the token economy in tokens or in money
        self.economy_in.addItems(["Economy in tokens", "Economy in cost"])
        self.economy_in.setToolTip("Token economy as tokens vs English, or as money per prompt")
        self.economy_in.currentIndexChanged.connect(self._draw_economy)
        self.chart.getPlotItem().setMouseEnabled(x=False, y=False)
        top = QHBoxLayout()
        top.addWidget(QLabel("Text"))
        top.addStretch(1)
        top.addWidget(self.samples)
        top.addWidget(self.economy_in)
        lower = QSplitter(Qt.Horizontal)
        lower.addWidget(self.by_model)
        lower.addWidget(self.chart)
        lower.setSizes([380, 720])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.text)
        layout.addWidget(self.spans, 2)
        layout.addWidget(self.summary)
        layout.addWidget(lower, 3)
        self._spans: list = []
        self.samples.activated.connect(self._on_sample)
        self.text.textChanged.connect(self.refresh)
        self.spans.highlighted.connect(self._on_hover)

    def set_model(self, tokenizer, models, prefill_tps=None, context=None) -> None:
        """The current model's tokenizer (a LightTokenizer), every installed model, and
        the current model's measured prefill speed and context, for the costs."""
        self.tokenizer, self.models = tokenizer, models
        self.prefill_tps, self.context = prefill_tps, context
        self.refresh()
        self._draw_economy()

    def _on_sample(self, index: int) -> None:
        if self.samples.itemData(index):
            self.text.setPlainText(self.samples.itemData(index))
        self.samples.setCurrentIndex(0)

    def refresh(self) -> None:
        if self.tokenizer is None:
            self.spans.setPlainText("Load a local model to see its tokens.")
            return
        text = self.text.toPlainText()
        self._spans = split(self.tokenizer, text)
        parts = []
        for i, s in enumerate(self._spans):
            shown = html.escape(s.text if s.text else s.label).replace("\n", "↵<br>")
            if s.is_bytes:
                shown = f"<i>{html.escape(s.label)}</i>" + (html.escape(s.text) if s.text else "")
            color = PALETTE[i % len(PALETTE)]
            parts.append(
                f"<a href='{i}' style='background:{color};color:#111;"
                f"text-decoration:none'>{shown}</a>"
            )
        self.spans.setHtml(
            "<div style='font-size:13pt;line-height:160%'>" + "".join(parts) + "</div>"
        )
        st = stats(len(self._spans), text)
        cost = ""
        if self.prefill_tps:
            cost = f" · about {len(self._spans) / self.prefill_tps:.2f} s to prefill here"
        if self.context:
            cost += f" · {len(self._spans) / self.context:.3%} of the context"
        self.summary.setText(
            f"{st['tokens']} tokens · {st['words']} words "
            f"({st['tokens_per_word']:.2f} tokens per word) · "
            f"{st['characters']} characters ({st['tokens_per_character']:.2f} "
            f"per character){cost}"
        )
        counts = counts_by_model(text, self.models)
        self.by_model.setRowCount(len(counts))
        for r, (name, n) in enumerate(counts.items()):
            self.by_model.setItem(r, 0, QTableWidgetItem(name))
            self.by_model.setItem(r, 1, QTableWidgetItem(str(n)))

    def _draw_economy(self, *_args) -> None:
        if self.tokenizer is None:
            return
        table = economy(self.tokenizer)
        if self.economy_in.currentIndex() == 1:  # in money (app/inside/economy_cost.py)
            draw_cost(self.chart.getPlotItem(), self.bars, self.local_bars, table, self.prefill_tps)
            return
        self.local_bars.setOpts(x=np.zeros(0), height=np.zeros(0))
        self.chart.getPlotItem().setLabel("left", "tokens vs English", **{"font-size": "8pt"})
        names = list(table)
        ratios = np.array([table[n]["vs_english"] for n in names])
        self.bars.setOpts(x=np.arange(len(names)), height=ratios, width=0.7)
        plot = self.chart.getPlotItem()
        plot.getAxis("bottom").setTicks([[(i, n) for i, n in enumerate(names)]])
        plot.setRange(xRange=(-0.6, len(names) - 0.4), yRange=(0, ratios.max() * 1.1), padding=0)
        worst = names[int(ratios.argmax())]
        set_title(
            plot,
            "Token economy: the same sentence",
            f"{worst} costs {ratios.max():.1f}× English's tokens, so "
            f"{ratios.max():.1f}× the context and prefill time",
        )

    def _on_hover(self, link) -> None:
        text = link.toString() if hasattr(link, "toString") else str(link)
        if not text.isdigit() or int(text) >= len(self._spans):
            QToolTip.hideText()
            return
        s = self._spans[int(text)]
        QToolTip.showText(
            QCursor.pos(),
            f"token {s.token_id} · {s.label!r} · bytes {' '.join(f'{b:02x}' for b in s.bytes)}",
            self.spans,
        )
