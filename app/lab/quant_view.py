"""Quantization A/B: re-quantized variants of the model against its float32
reference, teacher-forced over the same answer. A table per variant, and the
answer painted by per-token KL (changed top predictions underlined); clicking a
token shows both distributions side by side."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.core.appearance import on_theme
from app.core.theme import note_color, prob_color
from engine.lab import WINDOW_QUANT_BITS, QuantParams, QuantResult

COLUMNS = (
    "model",
    "MB",
    "mean KL (nats)",
    "top-1 agrees",
    "perplexity",
    "prefill tok/s",
    "decode tok/s",
)


def kl_color(kl: float) -> str:
    """Green (no damage) to red (KL ≥ 1 nat)."""
    c = prob_color(max(0.0, 1.0 - min(kl, 1.0)))
    return c.name() if hasattr(c, "name") else str(c)


class QuantView(QWidget):
    run_requested = Signal()  # the window asks `params()` and runs them

    def __init__(self, parent=None):
        super().__init__(parent)
        self.bits = {b: QCheckBox(f"{b}-bit") for b in (8, 6, 4, 3, 2)}
        for b, box in self.bits.items():
            box.setChecked(b in WINDOW_QUANT_BITS)
            box.setToolTip(f"Re-quantize the reference to {b} bits (group 64) at run time")
        self.tokens = QSpinBox()
        self.tokens.setRange(1, 256)
        self.tokens.setValue(QuantParams().tokens)
        self.tokens.setToolTip("Answer tokens teacher-forced through every variant")
        self.run = QPushButton("Run A/B")
        self.run.setToolTip(
            "Answer the playground's prompt greedily with the reference, then "
            "score every variant on the same tokens (runs in the engine)"
        )
        bar = QHBoxLayout()
        for w in (*self.bits.values(), QLabel("Answer tokens"), self.tokens, self.run):
            bar.addWidget(w)
        bar.addStretch(1)
        self.reference = QLabel("Run the A/B to compare variants of the current model.")
        self.reference.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.variant = QComboBox()
        self.variant.setToolTip("Which variant paints the answer")
        self.variant.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.text = QTextBrowser()
        self.text.setOpenLinks(False)
        self.detail = QTextBrowser()
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.text)
        split.addWidget(self.detail)
        split.setSizes([700, 400])
        pick = QHBoxLayout()
        pick.addWidget(QLabel("Answer painted by KL to the reference, for"))
        pick.addWidget(self.variant)
        pick.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.reference)
        layout.addWidget(self.table, 2)
        layout.addLayout(pick)
        layout.addWidget(split, 3)
        self.result: QuantResult | None = None
        self.run.clicked.connect(self.run_requested.emit)
        self.variant.currentIndexChanged.connect(lambda _i: self._paint())
        on_theme(self, lambda view: view._paint())  # its note's colour follows the theme
        self.text.anchorClicked.connect(self._on_anchor)

    def _on_anchor(self, url) -> None:
        if url.toString().isdigit():
            self._show_token(int(url.toString()))

    def params(self) -> QuantParams:
        """The experiment's parameters as chosen on screen.

        Raises:
            SettingsError: no width checked.
        """
        bits = tuple(b for b, box in self.bits.items() if box.isChecked())
        return QuantParams(bits, self.tokens.value())

    def show_params(self, params: QuantParams) -> None:
        """Tick the widths and set the answer length of `params`, an experiment started
        elsewhere (the tour), so the bar shows what runs."""
        for b, box in self.bits.items():
            box.setChecked(b in params.bits)
        self.tokens.setValue(params.tokens)

    def show_result(self, result: QuantResult) -> None:
        self.result = result
        self.reference.setText(
            f"{result.model}: the reference is {result.reference}; "
            "every other row is re-quantized from it at run time, except the rows "
            "marked 'as installed' (the weights on disk, measured as they are)."
        )
        rows = result.variants
        self.table.setRowCount(len(rows))
        for r, v in enumerate(rows):
            cells = (
                v.name,
                f"{v.weight_bytes / 1e6:,.0f}",
                f"{v.mean_kl:.4f}",
                f"{v.top1_agreement:.0%}",
                f"{v.perplexity:.2f}",
                f"{v.prefill_tps:.0f}",
                f"{v.decode_tps:.1f}",
            )
            for c, text in enumerate(cells):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        self.variant.blockSignals(True)
        self.variant.clear()
        for v in rows[1:]:
            self.variant.addItem(v.name, v.bits)
        requantized = [i for i, v in enumerate(rows[1:]) if v.bits is not None]
        self.variant.setCurrentIndex(requantized[-1] if requantized else self.variant.count() - 1)
        self.variant.blockSignals(False)
        self._paint()

    def _current(self) -> dict | None:
        if not self.result or self.variant.currentIndex() < 0:
            return None
        return self.result.variants[self.variant.currentIndex() + 1]

    def _paint(self) -> None:
        v = self._current()
        if v is None:
            return
        parts = []
        for i, label in enumerate(self.result.answer):
            style = f"background:{kl_color(v.kl[i])};color:#111;text-decoration:none"
            if not v.agree[i]:
                style += ";border-bottom:2px solid #d00;text-decoration:underline"
            shown = html.escape(label).replace("\n", "↵<br>")
            parts.append(f"<a href='{i}' style='{style}' title='KL {v.kl[i]:.3f}'>{shown}</a>")
        self.text.setHtml(
            "<div style='font-size:13pt;line-height:160%'>"
            + "".join(parts)
            + f"</div><p style='color:{note_color()}'>Colour: KL to the reference (green 0, "
            "red ≥ 1 nat). Underlined: the top prediction changed. Click a token "
            "for both distributions.</p>"
        )
        self._show_token(0)

    def _show_token(self, i: int) -> None:
        v = self._current()
        if v is None or i >= len(self.result.answer):
            return
        names = self.result.labels

        def table(key: str, title: str) -> str:
            rows = "".join(
                f"<tr><td>{html.escape(repr(names[str(t)]))}</td><td align='right'>"
                f"{p:.3f}</td></tr>"
                for t, p in self.result.top[key][i]
            )
            return f"<b>{title}</b><table>{rows}</table>"

        self.detail.setHtml(
            f"<p>Token {i}: {html.escape(repr(self.result.answer[i]))} · KL {v.kl[i]:.4f}"
            f" · Δlogprob {v.delta_logprob[i]:+.3f}</p>"
            + table("None", "reference")
            + "<br>"
            + table(v.key, v.name)
        )
