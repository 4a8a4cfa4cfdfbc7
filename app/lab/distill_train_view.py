"""Distillation, part 2: distil a small student here, soft targets against hard labels.

Settings (steps, width, layers, τ, α, the text) start at DistillTrainParams' defaults
(engine/lab/params.py holds each one); the rest of the run's settings come from `base`,
a DistillTrainParams the tab keeps (tests and the tour set a tiny one). While the engine
trains, each step's record (a LabStep) extends the two charts: the training loss of both
students, and their held-out KL to the teacher. At the end the charts hold the result's
own numbers, and the engine's sentence says which student is closer to the teacher.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import pen, set_title, style_plot
from app.core.appearance import themed_style
from app.core.theme import OUTPUT, RAW, tint
from app.lab.distill_compare_view import TEXT_FILE, read_text_file
from engine.errors import SettingsError
from engine.lab import DistillTrainParams, DistillTrainResult

DEFAULT = DistillTrainParams()
REDRAW_MS = 100  # steps arriving faster than this are drawn together
SOFT, HARD = "soft targets", "hard labels"


def _spin(low, high, value, step=1, decimals=None):
    box = QSpinBox() if decimals is None else QDoubleSpinBox()
    if decimals is not None:
        box.setDecimals(decimals)
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setValue(value)
    return box


class Curves:
    """Two series (soft-target, hard-label) on one plot, fed from growing buffers."""

    def __init__(self, widget: pg.PlotWidget, title: str, left: str):
        self.plot, self.title = widget.getPlotItem(), title
        style_plot(self.plot, title, left=left, bottom="step")
        self.plot.addLegend(offset=(10, 10))
        self.soft = self.plot.plot([], [], pen=pen(RAW, 2), name=SOFT, symbol="o", symbolSize=4)
        self.hard = self.plot.plot([], [], pen=pen(OUTPUT, 2), name=HARD, symbol="s", symbolSize=4)
        self.clear()

    def clear(self) -> None:
        self.x: list[float] = []
        self.ys: tuple[list[float], list[float]] = ([], [])
        self.draw()

    def add(self, x: float, soft: float, hard: float) -> None:
        self.x.append(x)
        self.ys[0].append(soft)
        self.ys[1].append(hard)

    def draw(self, detail: str = "") -> None:
        x = np.array(self.x, dtype=float)
        self.soft.setData(x, np.array(self.ys[0], dtype=float))
        self.hard.setData(x, np.array(self.ys[1], dtype=float))
        set_title(self.plot, self.title, detail)


class DistillTrainView(QWidget):
    start_requested = Signal()  # the tab asks `params()` and the lab runs them
    cancel_requested = Signal()
    open_student = Signal(str)  # the saved soft-target student's folder

    def __init__(self, parent=None):
        super().__init__(parent)
        self.base = DEFAULT  # every setting not on screen (batch, seq, lr, held-out …)
        self.steps = _spin(1, 100_000, DEFAULT.steps)
        self.width_box = _spin(16, 1024, DEFAULT.width, 16)
        self.layers = _spin(1, 12, DEFAULT.layers)
        self.tau = _spin(0.5, 10.0, DEFAULT.tau, 0.5, 1)
        self.alpha = _spin(0.0, 1.0, DEFAULT.alpha, 0.1, 2)
        self.tau.setToolTip("Temperature of the teacher's soft targets")
        self.alpha.setToolTip("Weight of the soft (KL) loss; 1 − α goes to the hard labels")
        self.text_path: str | None = None  # None: the text that ships with the app
        self.text_name = QLabel(f"text: {TEXT_FILE.name}")
        self.choose = QPushButton("Text file…")
        self.reset_text = QPushButton("Default text")
        self.start = QPushButton("Start")
        self.cancel = QPushButton("Cancel")
        self.cancel.setEnabled(False)
        self.open = QPushButton("Open the student")
        self.open.setEnabled(False)
        self.open.setToolTip("Load the soft-target student in the playground")
        self.error = QLabel()
        themed_style(self.error, lambda: f"color: {tint('error')[1]};")
        row1, row2 = QHBoxLayout(), QHBoxLayout()
        for label, box in (
            ("Steps", self.steps),
            ("Width", self.width_box),
            ("Layers", self.layers),
            ("τ", self.tau),
            ("α", self.alpha),
        ):
            row1.addWidget(QLabel(label))
            row1.addWidget(box)
        row1.addStretch(1)
        for w in (self.text_name, self.choose, self.reset_text, self.start, self.cancel):
            row2.addWidget(w)
        row2.addStretch(1)
        self.loss_chart, self.kl_chart = pg.PlotWidget(), pg.PlotWidget()
        self.loss = Curves(self.loss_chart, "Training loss", "loss")
        self.kl = Curves(self.kl_chart, "Held-out KL to the teacher", "nats / token")
        self.sentence = QLabel(
            "Start trains two students from the same weights on the same batches: one on "
            "the teacher's soft targets, one on the text's hard labels."
        )
        self.sentence.setWordWrap(True)
        self.sentence.setTextInteractionFlags(Qt.TextSelectableByMouse)
        end = QHBoxLayout()
        end.addWidget(self.sentence, 1)
        end.addWidget(self.open, 0, Qt.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row1)
        layout.addLayout(row2)
        layout.addWidget(self.error)
        layout.addWidget(self.loss_chart, 1)
        layout.addWidget(self.kl_chart, 1)
        layout.addLayout(end)
        self.result: DistillTrainResult | None = None
        self.steps_seen = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REDRAW_MS)
        self._timer.timeout.connect(self._draw)
        self.start.clicked.connect(self._on_start)
        self.cancel.clicked.connect(self.cancel_requested.emit)
        self.choose.clicked.connect(self._on_choose)
        self.reset_text.clicked.connect(lambda: self.use_file(None))
        self.open.clicked.connect(self._on_open)

    def params(self) -> DistillTrainParams:
        """The run's settings: those on screen over `base` (SettingsError: out of range,
        or a text file that cannot be read)."""
        text = None if self.text_path is None else read_text_file(self.text_path)
        return replace(
            self.base,
            text=text,
            steps=self.steps.value(),
            width=self.width_box.value(),
            layers=self.layers.value(),
            tau=round(self.tau.value(), 3),
            alpha=round(self.alpha.value(), 3),
        )

    def use_file(self, path: str | None) -> None:
        """Train on a text file (None: the text that ships with the app)."""
        self.text_path = path
        self.text_name.setText(f"text: {Path(path).name if path else TEXT_FILE.name}")

    def _on_choose(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Training text", "", "Text (*.txt *.md)")
        if path:
            self.use_file(path)

    def _on_start(self) -> None:
        try:
            self.params()
        except SettingsError as e:
            self.error.setText(str(e))
            return
        self.error.clear()
        self.start_requested.emit()

    def began(self) -> None:
        """A run started: empty charts, no verdict yet."""
        self.result, self.steps_seen = None, 0
        self.loss.clear()
        self.kl.clear()
        self.open.setEnabled(False)
        self.sentence.setText("Training… (the teacher reads the text first)")

    def set_running(self, running: bool) -> None:
        self.start.setEnabled(not running)
        self.cancel.setEnabled(running)

    def add_step(self, step) -> None:
        """One LabStep of the run: its losses, and the held-out KL when measured."""
        d = step.data
        if d.get("soft_loss") is not None:
            self.loss.add(step.step, d["soft_loss"], d["hard_loss"])
        if d.get("heldout_kl_soft") is not None:
            self.kl.add(step.step, d["heldout_kl_soft"], d["heldout_kl_hard"])
        self.steps_seen = step.step
        if not self._timer.isActive():
            self._timer.start()

    def _draw(self) -> None:
        self.loss.draw(f"step {self.steps_seen:,}")
        self.kl.draw(f"step {self.steps_seen:,}")

    def show_result(self, r: DistillTrainResult) -> None:
        """The finished (or cancelled) run: the charts redrawn from its own numbers."""
        self._timer.stop()
        self.result = r
        self.loss.clear()
        self.kl.clear()
        for i, (s, h) in enumerate(zip(r.soft_loss, r.hard_loss, strict=True), start=1):
            self.loss.add(i, s, h)
        for x, s, h in zip(r.eval_steps, r.heldout_kl_soft, r.heldout_kl_hard, strict=True):
            self.kl.add(x, s, h)
        last = f"{SOFT} {r.soft_loss[-1]:.3f}, {HARD} {r.hard_loss[-1]:.3f}" if r.steps_done else ""
        self.loss.draw(f"after {r.steps_done:,} steps: {last}" if last else "no step done")
        self.kl.draw(
            f"{SOFT} {r.heldout_kl_soft[0]:.2f} → {r.heldout_kl_soft[-1]:.2f}, "
            f"{HARD} {r.heldout_kl_hard[0]:.2f} → {r.heldout_kl_hard[-1]:.2f} nats/token"
        )
        self.sentence.setText(verdict_text(r))
        self.open.setEnabled(bool(r.saved.get("soft")))

    def _on_open(self) -> None:
        if self.result is not None and self.result.saved.get("soft"):
            self.open_student.emit(self.result.saved["soft"])


def verdict_text(r: DistillTrainResult) -> str:
    """The engine's sentence about the run, what the students are, and where they went."""
    same = "the same batches (checked)" if r.same_batches else "DIFFERENT batches"
    lines = [
        r.sentence,
        f"Each student has {r.student_parameters:,} parameters, trained on {r.train_tokens:,} "
        f"tokens of the teacher's text with {same}; KL measured on {r.heldout_tokens:,} "
        "held-out tokens. At this size and length this is a demonstration: real "
        "distillation trains far larger students on billions of tokens, where soft "
        "targets carry the teacher's whole distribution at every token.",
    ]
    if r.saved.get("soft"):
        lines.append(f"Saved as {Path(r.saved['soft']).name} and {Path(r.saved['hard']).name}.")
    elif r.cancelled:
        lines.append("Nothing saved: the run was cancelled.")
    return " ".join(lines)
