"""The lab's Distillation tab: teacher and student on one text (distill_compare_view.py)
beside a small student distilled here (distill_train_view.py).

The lab window runs what the tab asks, as for every tab: `run_requested`, then
`params()` (a DistillParams for Compare, a DistillTrainParams for Start), then
`show_result()` with the engine's result. The tab itself listens to the lab's engine
bridge for the training's step records (`lab_step`), for busy (Start and Cancel), and
cancels through it (the engine checks the flag before each step).

Public surface (the tour opens this tab): `compare_quick()` compares the teacher with
itself as stored on the shipped text; `start_training(params)` trains with a given
DistillTrainParams; `result` / `train_result` are the last results shown;
`open_student(str)` carries the saved soft-target student's folder to the playground.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import scroll_not_zoom
from app.lab.distill_compare_view import DistillCompareView, default_text
from app.lab.distill_train_view import DistillTrainView
from engine.lab import DistillParams, DistillResult, DistillTrainParams, DistillTrainResult

COMPARE, TRAIN = DistillParams.kind, DistillTrainParams.kind


class DistillView(QWidget):
    run_requested = Signal()  # the window asks `params()` and runs them
    open_student = Signal(str)  # a saved student's folder, to load in the playground

    def __init__(self, bridge, parent=None):
        """`bridge`: the lab window's engine bridge (steps, busy, cancel)."""
        super().__init__(parent)
        self.bridge = bridge
        self.compare, self.train = DistillCompareView(), DistillTrainView()
        self.run = self.compare.run  # the window enables it when the engine is free
        self.requested: str | None = None  # which part asked the window to run
        self.asked: str | None = None  # the part whose params the window took last
        self._given: DistillTrainParams | None = None  # start_training's own settings
        split = QSplitter(Qt.Horizontal)
        for title, part in (
            ("Teacher and student on one text", self.compare),
            ("Distil a student here", self.train),
        ):
            box = QGroupBox(title)
            inner = QVBoxLayout(box)
            scroll = QScrollArea()  # a narrow window scrolls a part, never widens the lab
            scroll.setWidget(part)
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.NoFrame)
            for chart in part.findChildren(pg.PlotWidget):
                scroll_not_zoom(chart)  # the wheel scrolls the part, never zooms a chart
            inner.addWidget(scroll)
            split.addWidget(box)
        split.setSizes([640, 640])
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)
        self.compare.compare_requested.connect(lambda: self._request(COMPARE))
        self.train.start_requested.connect(lambda: self._request(TRAIN))
        self.train.cancel_requested.connect(self.cancel)
        self.train.open_student.connect(self.open_student)
        self.bridge.lab_step.connect(self._on_step)
        self.bridge.busy_changed.connect(self._on_busy)

    @property
    def result(self) -> DistillResult | None:
        """The last comparison shown."""
        return self.compare.result

    @property
    def train_result(self) -> DistillTrainResult | None:
        """The last training run shown (finished or cancelled)."""
        return self.train.result

    def set_teacher(self, model) -> None:
        """The playground's model (a ModelRecord or None) is the teacher."""
        if not self.bridge.busy:
            self.compare.set_teacher(model)

    def params(self) -> DistillParams | DistillTrainParams:
        """What the part that asked runs (SettingsError: its settings are not valid)."""
        self.asked, self.requested = self.requested, None  # the run about to start
        if self.asked == TRAIN:
            return self._given or self.train.params()
        return self.compare.params()

    def compare_quick(self) -> None:
        """Compare the teacher with its own weights as stored, on the shipped text."""
        self.compare.text.setPlainText(default_text())
        if self.compare.student.count():
            self.compare.student.setCurrentIndex(0)  # the teacher as stored
        self._request(COMPARE)

    def start_training(self, params: DistillTrainParams | None = None) -> None:
        """Start a training run with `params` (None: the settings on screen)."""
        self._given = params
        self._request(TRAIN)

    def cancel(self) -> None:
        """Ask the engine to stop the run (a training run stops before its next step)."""
        if self.bridge.busy:
            self.bridge.cancel()

    def _request(self, kind: str) -> None:
        self.requested = kind
        self.run_requested.emit()

    def show_result(self, result) -> None:
        """The result's own kind says which half shows it (distill-train or distill)."""
        (self.train if result.kind == DistillTrainResult.kind else self.compare).show_result(result)

    def _on_step(self, step) -> None:
        if step.kind == TRAIN:
            self.train.add_step(step)

    def _on_busy(self, busy: bool) -> None:
        training = busy and self.asked == TRAIN
        if training:
            self.train.began()
        self.train.set_running(training)
        self.train.start.setEnabled(not busy)
        if not busy:
            self.asked, self._given = None, None

    def cleanup(self) -> None:
        self.bridge.lab_step.disconnect(self._on_step)
        self.bridge.busy_changed.disconnect(self._on_busy)
