"""Speculative decoding: a re-quantized draft of the model proposes k tokens, the
model checks them in one pass. The answer shows accepted drafts, each rejected
draft struck through beside the target's correction (both models' probabilities
on hover); a chart shows acceptance and tokens per target pass against k, and the
measured speed-up (or slow-down) against the target alone."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTextBrowser,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import pen, set_title, style_plot
from app.core.appearance import on_theme, themed_style
from app.core.theme import OUTPUT, PROMPT, note_color, tint
from engine.errors import SettingsError
from engine.lab import SpeculativeParams, SpeculativeResult

DEFAULT = SpeculativeParams()

ACCEPTED, REJECTED, CORRECTION = "#c7f0c2", "#f7c6c5", "#ffe08a"


class SpeculativeView(QWidget):
    run_requested = Signal()  # the window asks `params()` and runs them

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ks = QLineEdit(",".join(map(str, DEFAULT.ks)))
        self.ks.setToolTip("Tokens drafted per target pass: one run per value")
        self.draft_bits = QSpinBox()
        self.draft_bits.setRange(2, 8)
        self.draft_bits.setValue(DEFAULT.draft_bits)
        self.draft_bits.setToolTip("The draft is the model re-quantized to this many bits")
        self.tokens = QSpinBox()
        self.tokens.setRange(4, 256)
        self.tokens.setValue(DEFAULT.tokens)
        self.run = QPushButton("Run")
        self.error = QLabel()
        themed_style(self.error, lambda: f"color: {tint('error')[1]};")
        bar = QHBoxLayout()
        for w in (
            QLabel("k"),
            self.ks,
            QLabel("Draft bits"),
            self.draft_bits,
            QLabel("Answer tokens"),
            self.tokens,
            self.run,
            self.error,
        ):
            bar.addWidget(w)
        bar.addStretch(1)
        self.pick = QComboBox()
        self.summary = QLabel("Run to see the draft's proposals checked by the model.")
        self.summary.setWordWrap(True)
        self.text = QTextBrowser()
        self.text.setOpenLinks(False)
        self.chart = pg.PlotWidget()
        item = self.chart.getPlotItem()
        style_plot(item, "Acceptance against k", left="rate / tokens per pass", bottom="k")
        item.addLegend(offset=(10, 10))
        self.accept_curve = item.plot(
            [], [], pen=pen(PROMPT, 2), symbol="o", symbolBrush=PROMPT, name="acceptance"
        )
        self.per_pass = item.plot(
            [],
            [],
            pen=pen(OUTPUT, 2),
            symbol="s",
            symbolBrush=OUTPUT,
            name="tokens per target pass",
        )
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.text)
        split.addWidget(self.chart)
        split.setSizes([700, 450])
        pick = QHBoxLayout()
        pick.addWidget(QLabel("Show the run with"))
        pick.addWidget(self.pick)
        pick.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addLayout(pick)
        layout.addWidget(split, 1)
        self.result: SpeculativeResult | None = None
        self._hover: dict[str, str] = {}
        self.run.clicked.connect(self._on_run)
        self.pick.currentIndexChanged.connect(lambda _i: self._paint())
        on_theme(self, lambda view: view._paint())  # its note's colour follows the theme
        self.text.highlighted.connect(self._on_hover)

    def params(self) -> SpeculativeParams:
        """The experiment's parameters as chosen on screen.

        Raises:
            SettingsError: k values that are not whole numbers from 1 to 16, or a
                draft width MLX does not quantize to.
        """
        return SpeculativeParams(self._ks(), self.draft_bits.value(), self.tokens.value())

    def _ks(self) -> tuple[int, ...]:
        """The k values typed, sorted, each once (SettingsError: not 1..16)."""
        try:
            ks = sorted({int(k) for k in self.ks.text().split(",") if k.strip()})
        except ValueError:
            raise SettingsError("k: whole numbers separated by commas, e.g. 1,2,4") from None
        if not ks or not all(1 <= k <= 16 for k in ks):
            raise SettingsError("k must be between 1 and 16")
        return tuple(ks)

    def _on_run(self) -> None:
        try:
            self._ks()
        except SettingsError as e:  # said beside the k field
            self.error.setText(str(e))
            return
        self.error.clear()
        self.run_requested.emit()

    def show_result(self, result: SpeculativeResult) -> None:
        self.result = result
        runs = result.runs
        self.pick.blockSignals(True)
        self.pick.clear()
        for r in runs:
            self.pick.addItem(f"k = {r.k}", r.k)
        self.pick.setCurrentIndex(len(runs) - 1)
        self.pick.blockSignals(False)
        ks = np.array([r.k for r in runs], dtype=float)
        self.accept_curve.setData(ks, [r.acceptance for r in runs])
        self.per_pass.setData(ks, [r.tokens_per_pass for r in runs])
        best = max(runs, key=lambda r: r.speedup)
        verdict = "faster" if best.speedup > 1 else "slower"
        set_title(
            self.chart.getPlotItem(),
            "Acceptance against k",
            f"best k = {best.k}: {best.speedup:.2f}× the target alone ({verdict})",
        )
        self._paint()

    def _paint(self) -> None:
        if not self.result or self.pick.currentIndex() < 0:
            return
        run, names = self.result.runs[self.pick.currentIndex()], self.result.labels
        self.summary.setText(
            f"Draft: {self.result.draft}. k = {run.k}: {run.drafted} drafted, "
            f"{run.accepted} accepted ({run.acceptance:.0%}), {run.rejected} rejected; "
            f"{run.target_passes} target passes for {len(run.tokens)} tokens "
            f"({run.tokens_per_pass:.2f} per pass); {run.seconds:.2f} s against "
            f"{self.result.target_alone_s:.2f} s for the target alone = {run.speedup:.2f}×. "
            f"Output identical to the target's own: {'yes' if run.same_as_target else 'NO'}."
        )
        self._hover.clear()
        parts = [
            self._span(
                names[str(run.tokens[0])], CORRECTION, "first", "from the target's prefill pass"
            )
        ]
        for n, rd in enumerate(run.rounds):
            for i, tok in enumerate(rd.drafted):
                probs = f"draft p={rd.draft_probs[i]:.3f}, target p={rd.target_probs[i]:.3f}"
                if i < rd.accepted:
                    parts.append(
                        self._span(
                            names[str(tok)], ACCEPTED, f"{n}a{i}", f"accepted draft · {probs}"
                        )
                    )
                elif i == rd.accepted:
                    parts.append(
                        self._span(
                            names[str(tok)],
                            REJECTED,
                            f"{n}r{i}",
                            f"rejected draft · {probs}",
                            strike=True,
                        )
                    )
            parts.append(
                self._span(
                    names[str(rd.correction)],
                    CORRECTION,
                    f"{n}c",
                    "the target's own token (one per pass)",
                )
            )
        self.text.setHtml(
            "<div style='font-size:13pt;line-height:170%'>"
            + "".join(parts)
            + f"</div><p style='color:{note_color()}'>Green: accepted drafts. Red, struck "
            "through: the first rejected draft of a pass. Yellow: the target's "
            "own token. Hover for both models' probabilities.</p>"
        )

    def _span(self, label: str, color: str, key: str, hover: str, strike=False) -> str:
        self._hover[key] = f"{label!r}: {hover}"
        deco = "line-through" if strike else "none"
        shown = html.escape(label).replace("\n", "↵<br>")
        return (
            f"<a href='{key}' style='background:{color};color:#111;"
            f"text-decoration:{deco}'>{shown}</a>"
        )

    def _on_hover(self, link) -> None:
        key = link.toString() if hasattr(link, "toString") else str(link)
        if key in self._hover:
            QToolTip.showText(QCursor.pos(), self._hover[key], self.text)
        else:
            QToolTip.hideText()
