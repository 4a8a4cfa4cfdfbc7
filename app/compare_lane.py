"""CompareLane: one lane of a comparison: its own prompt, model and sampling
settings, its streamed tokens (shaded by probability) and a probability/entropy strip."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
)

from app.charts.base import pen
from app.model_picker import fill_models
from app.run_state import RunState
from app.theme import ENTROPY, RAW
from app.token_view import TokenView
from engine.settings import MAX_TEMPERATURE, SamplingSettings

LANE_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2")


class CompareLane(QFrame):
    stop_requested = Signal(object)  # this lane

    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.index = index
        self.color = LANE_COLORS[index % len(LANE_COLORS)]
        self.setFrameShape(QFrame.StyledPanel)
        self.state = RunState()
        self.divergence: int | None = None
        title = QLabel(f"<b style='color:{self.color}'>Lane {chr(65 + index)}</b>")
        self.status = QLabel("idle")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop this lane (a queued lane is skipped)")
        self.copy_from = QComboBox()
        self.copy_from.setToolTip("Copy another lane's prompt and settings into this one")
        head = QHBoxLayout()
        for w in (title, self.status):
            head.addWidget(w)
        head.addStretch(1)
        head.addWidget(self.copy_from)
        head.addWidget(self.stop_button)
        self.prompt = QPlainTextEdit()
        self.prompt.setPlaceholderText("This lane's prompt")
        self.prompt.setFixedHeight(54)
        self.model = QComboBox()
        self.model.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.model.setMinimumContentsLength(12)
        fill_models(self.model)  # the same list as the window's picker, servers included
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0, MAX_TEMPERATURE)
        self.temperature.setSingleStep(0.1)
        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.01, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_p.setValue(1.0)
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 100000)
        self.max_tokens.setValue(48)
        form = QFormLayout()
        form.addRow("Model", self.model)
        for title, pair in (("Sampling", (("T", self.temperature), ("top-p", self.top_p))),
                            ("Seed", (("", self.seed), ("max", self.max_tokens)))):  # fmt: skip
            row = QHBoxLayout()  # two short rows: four lanes fit a 1600 px screen
            for label, w in pair:
                if label:
                    row.addWidget(QLabel(label))
                w.setMinimumWidth(60)
                row.addWidget(w, 1)
            form.addRow(title, row)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #8a1c1c; background: #fde2e1; padding: 4px;")
        self.error.hide()
        self.tokens = TokenView()
        self.strip = pg.PlotWidget()
        self.strip.setFixedHeight(90)
        self.strip.setMenuEnabled(False)
        self.strip.setMouseEnabled(x=False, y=False)
        self.strip.setYRange(0, 1.02, padding=0)
        self.strip.getAxis("left").setWidth(28)
        self.prob_curve = self.strip.plot(pen=pen(RAW, 1))
        self.entropy_curve = self.strip.plot(pen=pen(ENTROPY, 1))  # scaled to 0..1
        self.div_line = pg.InfiniteLine(angle=90, pen=pen("#e45756", 1))
        self.div_line.hide()
        self.strip.addItem(self.div_line)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.prompt)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(self.tokens, 1)
        layout.addWidget(QLabel("<small>p(chosen) — entropy (scaled) — red: divergence</small>"))
        layout.addWidget(self.strip)
        self.stop_button.clicked.connect(lambda: self.stop_requested.emit(self))

    def settings(self) -> SamplingSettings:
        return SamplingSettings(temperature=round(self.temperature.value(), 4),
                                top_p=self.top_p.value(), seed=self.seed.value(),
                                max_tokens=self.max_tokens.value())  # fmt: skip

    def copy_settings(self, other: CompareLane) -> None:
        self.prompt.setPlainText(other.prompt.toPlainText())
        self.model.setCurrentIndex(other.model.currentIndex())
        for name in ("temperature", "top_p", "seed", "max_tokens"):
            getattr(self, name).setValue(getattr(other, name).value())

    def model_path(self) -> str | None:
        return self.model.currentData()

    def reset(self, prompt: str, settings: SamplingSettings) -> None:
        self.state = RunState(prompt=prompt, settings=settings)
        self.divergence = None
        self.tokens.clear_tokens()
        self.error.hide()
        self.div_line.hide()
        self.status.setText("queued")
        self.redraw()

    def add_tokens(self, records) -> None:
        self.state.add_tokens(records)
        self.tokens.append_tokens(records)

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()

    def mark_divergence(self, step: int | None) -> None:
        self.divergence = step
        self.tokens.select_step(step)
        self.div_line.setVisible(step is not None)
        if step is not None:
            self.div_line.setValue(step)

    def redraw(self) -> None:
        n = self.state.n
        x = np.arange(n)
        self.prob_curve.setData(x, self.state.prob[:n], connect="finite")  # NaN: not reported
        ent = self.state.entropy[:n]
        top = float(np.nanmax(ent)) if n and np.isfinite(ent).any() else 1.0
        self.entropy_curve.setData(x, ent / max(top, 1e-9), connect="finite")
        self.strip.setXRange(-0.5, max(n, 8) - 0.5, padding=0)
