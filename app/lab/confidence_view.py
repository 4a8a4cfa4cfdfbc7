"""The lab's Confidence tab: does the model know when it is wrong? A question set is
answered in the engine (`lab calibrate`: greedy and N samples per question), then drawn:
the reliability diagram of the chosen signal, every signal's AUROC with its interval,
the risk-coverage curves (confidence_charts.py), and the questions, the most confident
first, wrong answers marked (confidence_table.py).

As every tab: `run_requested`, then `params()` (a CalibrateParams), then `show_result()`
with the engine's ConfidenceResult. The tab listens to the lab's engine bridge for the
run's steps (each question's verdict as it comes, then the runs the engine journaled),
its progress and busy (Run and Cancel), and cancels through it (the engine stops between
questions and sends the questions answered so far).

A person may dispute a verdict: the figures are then those of
engine.lab.confidence.with_overrides, and the result kept is that one (its `overrides`).
Clicking a question opens its greedy answer, journaled by the engine in the History
session "Confidence", read-only in the playground (`open_run(RunLog)`).

"Compare with…" names a second local model; Compare (`compare_requested`) has the window
run the parameters of the result shown (`ran`, the same questions) on it, and
`show_other()` draws both side by side in the "Side by side" tab (confidence_compare.py).
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import scroll_pane
from app.core.appearance import on_theme
from app.lab.confidence_charts import AurocChart, ReliabilityChart, RiskCoverageChart, short_name
from app.lab.confidence_compare import ConfidenceCompare
from app.lab.confidence_table import ConfidenceTable
from app.lab.question_source import (
    choose_question_file,
    journaled_answer,
    show_question_source,
)
from engine.errors import SettingsError
from engine.lab.confidence import SIGNALS, ConfidenceResult, with_overrides
from engine.lab.params import CalibrateParams
from engine.lab.questions import load_questions

DEFAULT = CalibrateParams()
WINDOW_LIMIT = 50  # questions a first run answers (0: all of them)
RUNS_STEP = "calibrate-runs"  # engine/backends/mlx/calibrate_runs.RUNS_STEP
HINT = (
    "Click a question to open its answer in the playground. "
    "Tick or clear 'right' to dispute a verdict: every figure is recomputed."
)


def local_models() -> list[tuple[str, str]]:
    """(name, folder) of each local MLX model a second run may load (the app's models
    folder and the Hugging Face cache; none on a damaged folder)."""
    from engine.models.catalogue import list_models

    try:
        models = list_models(other_tools=False)
    except (OSError, SettingsError):
        return []
    return [(m.name, m.path) for m in models if Path(m.path).is_dir()]


class ConfidenceView(QWidget):
    run_requested = Signal()  # the window asks `params()` and runs them
    compare_requested = Signal()  # the window runs `ran` on `other_model()`
    open_run = Signal(object)  # a RunLog: a question's answer, to show in the playground
    runs_saved = Signal(str)  # the History session the engine journaled the answers in

    def __init__(self, bridge, parent=None):
        """`bridge`: the lab window's engine bridge (steps, progress, busy, cancel)."""
        super().__init__(parent)
        self.bridge = bridge
        self.questions: str | None = None  # a question file; None: the bundled set
        self.result: ConfidenceResult | None = None  # as shown (a person's verdicts in)
        self.run_ids: list[str | None] = []  # per row of the result: its journaled run
        self.saved_error: str | None = None
        self.running = False  # this tab's experiment is in flight
        self.tally = [0, 0]  # answered, right so far (from the run's steps)
        self.ran: CalibrateParams | None = None  # the parameters of the result shown
        self.other: ConfidenceResult | None = None  # side B: `ran` on the other model
        self.comparing = False  # side B's run is in flight

        self.source = QLabel()
        self.choose = QPushButton("Question file…")
        self.choose.setToolTip("Answer your own questions: JSONL or CSV (question, answers)")
        self.bundled = QPushButton("Bundled set")
        self.bundled.setToolTip("Answer the bundled factual questions")
        self.limit = QSpinBox()
        self.limit.setRange(0, 100_000)
        self.limit.setSpecialValueText("all")
        self.limit.setValue(WINDOW_LIMIT)
        self.limit.setToolTip("Answer only the first this many questions (all: every one)")
        self.samples = QSpinBox()
        self.samples.setRange(0, 32)
        self.samples.setValue(DEFAULT.samples)
        self.samples.setToolTip("Sampled answers per question (agreement, entropy over answers)")
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.05, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setValue(DEFAULT.temperature)
        self.temperature.setToolTip("The samples' temperature (the judged answer is greedy)")
        self.run = QPushButton("Run")
        self.run.setToolTip("Answer the questions with the playground's model, in the engine")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop after the question being answered; keep the rest")
        self.cancel_button.setEnabled(False)
        self.other_model = QComboBox()
        self.other_model.setToolTip("A second local model to answer the same questions")
        self.other_model.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.other_model.addItem("Compare with…", None)
        for name, path in local_models():
            self.other_model.addItem(name, path)
        self.compare = QPushButton("Compare")
        self.compare.setToolTip("Run the result's questions on the chosen model: side by side")
        self.compare.setEnabled(False)
        bar = QHBoxLayout()
        for w in (
            QLabel("Questions:"),
            self.source,
            self.choose,
            self.bundled,
            QLabel("Limit"),
            self.limit,
            QLabel("Samples"),
            self.samples,
            QLabel("Temperature"),
            self.temperature,
            self.run,
            self.cancel_button,
            self.other_model,
            self.compare,
        ):
            bar.addWidget(w)
        bar.addStretch(1)
        self.progress = QLabel("")
        self.summary = QLabel("Run to see whether the model's confidence tells right from wrong.")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.RichText)
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)

        self.reliability, self.auroc, self.coverage = (
            ReliabilityChart(),
            AurocChart(),
            RiskCoverageChart(),
        )
        charts = QSplitter(Qt.Horizontal)
        for chart in (self.reliability, self.auroc, self.coverage):
            chart.setMinimumSize(260, 220)
            charts.addWidget(chart)
        self.signal = QComboBox()
        self.signal.setToolTip("The signal the diagram shows and the table is sorted by")
        self.signal.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.hint = QLabel(HINT)
        self.hint.setWordWrap(True)
        self.table = ConfidenceTable()
        lower = QWidget()
        below = QVBoxLayout(lower)
        below.setContentsMargins(0, 0, 0, 0)
        pick = QHBoxLayout()
        pick.addWidget(QLabel("Signal"))
        pick.addWidget(self.signal)
        pick.addWidget(self.hint, 1)
        below.addLayout(pick)
        below.addWidget(self.table, 1)
        self.side = ConfidenceCompare()
        self.lower = QTabWidget()
        self.lower.addTab(lower, "Questions")
        self.lower.addTab(self.side, "Side by side")
        split = QSplitter(Qt.Vertical)
        split.addWidget(charts)
        split.addWidget(self.lower)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.progress)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        scroll_pane(self, body)  # a narrow window scrolls the tab, never widens the Lab
        self._show_source()

        self.run.clicked.connect(self.run_requested.emit)
        self.cancel_button.clicked.connect(self.cancel)
        self.compare.clicked.connect(self.compare_requested.emit)
        self.other_model.currentIndexChanged.connect(lambda _i: self._enable_compare())
        self.choose.clicked.connect(self._choose_file)
        self.bundled.clicked.connect(lambda: self.set_questions(None))
        self.signal.currentIndexChanged.connect(lambda _i: self._draw())
        self.table.flipped.connect(self.flip, Qt.QueuedConnection)  # not inside its own edit
        self.table.opened.connect(self.open_question)
        self.bridge.lab_step.connect(self._on_step)
        self.bridge.progress.connect(self._on_progress)
        self.bridge.busy_changed.connect(self._on_busy)
        on_theme(self, lambda view: view._draw())  # the table's error colours follow it

    # -- parameters ---------------------------------------------------------------------
    def params(self) -> CalibrateParams:
        """The run's parameters as chosen on screen (SettingsError: a bad question file)."""
        load_questions(self.questions)  # a bad file: one sentence, before the engine is asked
        return CalibrateParams(
            questions=self.questions,
            samples=self.samples.value(),
            limit=self.limit.value() or None,
            temperature=round(self.temperature.value(), 2),
            journal=True,
        )

    def show_params(self, params: CalibrateParams) -> None:
        """Show `params`, the experiment the window has just started (by this tab's Run or
        from elsewhere), and begin following it."""
        self.set_questions(params.questions)
        self.limit.setValue(params.limit or 0)
        self.samples.setValue(params.samples)
        self.temperature.setValue(params.temperature)
        self.running, self.tally = True, [0, 0]
        self.run_ids, self.saved_error = [], None
        self.ran, self.other, self.comparing = params, None, False
        self.cancel_button.setEnabled(True)
        self.progress.setText("Loading the model…")

    def chosen_model(self) -> str | None:
        """The folder of the model chosen in "Compare with…" (None: none chosen)."""
        return self.other_model.currentData()

    def choose_model(self, path: str) -> None:
        """Choose `path` in "Compare with…" (added when the list lacks it)."""
        i = self.other_model.findData(path)
        if i < 0:
            self.other_model.addItem(Path(path).name, path)
            i = self.other_model.count() - 1
        self.other_model.setCurrentIndex(i)

    def show_compare_params(self, path: str) -> None:
        """The window has started `ran` on the model at `path` (side B): follow it."""
        self.running, self.comparing, self.tally = True, True, [0, 0]
        self.cancel_button.setEnabled(True)
        self.progress.setText(f"Loading {Path(path).name} for side B…")

    def show_other(self, result: ConfidenceResult) -> None:
        """Side B's result: both drawn side by side, that tab brought up."""
        self.other, self.running, self.comparing = result, False, False
        self.cancel_button.setEnabled(False)
        self._draw()
        self.lower.setCurrentWidget(self.side)

    def _enable_compare(self) -> None:
        idle = not self.bridge.busy
        self.compare.setEnabled(idle and self.ran is not None and self.chosen_model() is not None)

    def set_questions(self, path: str | None) -> None:
        """Answer the questions of `path` (JSONL or CSV); None: the bundled set."""
        self.questions = path
        self._show_source()

    def _show_source(self) -> None:
        show_question_source(self.source, self.bundled, self.questions)

    def _choose_file(self) -> None:
        path = choose_question_file(self)
        if path:
            self.set_questions(path)

    def cancel(self) -> None:
        """Ask the engine to stop after the question it is answering."""
        if self.running and self.bridge.busy:
            self.bridge.cancel()
            self.progress.setText("Cancelling after this question…")

    # -- the run as it goes ---------------------------------------------------------------
    def _on_progress(self, message: str, _fraction: float) -> None:
        if not self.running:
            return
        answered, right = self.tally
        so_far = f" · so far {right} of {answered} right" if answered else ""
        self.progress.setText(message + so_far)

    def _on_step(self, step) -> None:
        if step.kind == CalibrateParams.kind:
            self.tally = [step.step, self.tally[1] + bool(step.data.get("correct"))]
        elif step.kind == RUNS_STEP and not self.comparing:  # side B's runs: not the rows
            self.run_ids = list(step.data.get("run_ids") or [])
            self.saved_error = step.data.get("error")
            if step.data.get("session_id"):
                self.runs_saved.emit(step.data["session_id"])

    def _on_busy(self, busy: bool) -> None:
        if not busy and self.running:  # it ended without a result: the header says why
            self.progress.setText("")
            self.running = self.comparing = False
        self.cancel_button.setEnabled(busy and self.running)
        self._enable_compare()

    # -- the result -----------------------------------------------------------------------
    def show_result(self, result: ConfidenceResult) -> None:
        """Draw the engine's result (a new run: the signal chosen stays when it has one)."""
        self.result = result
        self.running = False  # its run is over: what it took is said below the bar
        self.cancel_button.setEnabled(False)
        chosen = self.signal.currentData()
        self.signal.blockSignals(True)
        self.signal.clear()
        for s in result.signals:
            self.signal.addItem(f"{short_name(s.key)}: {s.name}", s.key)
        keys = [s.key for s in result.signals]
        self.signal.setCurrentIndex(keys.index(chosen) if chosen in keys else 0)
        self.signal.blockSignals(False)
        self._draw()

    def chosen(self) -> str:
        """The signal chosen (the first of the result's when none)."""
        return self.signal.currentData() or next(iter(SIGNALS))

    def flip(self, index: int, right: bool) -> None:
        """A person's verdict on row `index` of the result: every figure recomputed."""
        if self.result is None or self.result.rows[index].correct == right:
            return
        self.result = with_overrides(self.result, {index: right})
        self._draw()

    def _draw(self) -> None:
        r = self.result
        if r is None:
            return
        key = self.chosen()
        summary = next((s for s in r.signals if s.key == key), None)
        self.reliability.show_signal(summary)
        self.auroc.show_result(r, key)
        self.coverage.show_result(r, key)
        self.table.show_rows(r.rows, key)
        self.summary.setText(summary_text(r))
        if self.other is not None:
            self.side.show_pair(r, self.other)
        if not self.running:
            self.progress.setText(outcome_text(r, self.run_ids, self.saved_error))

    def open_question(self, index: int) -> None:
        """Open row `index`'s journaled answer in the playground (`open_run`)."""
        run_id = self.run_ids[index] if 0 <= index < len(self.run_ids) else None
        run, why = journaled_answer(run_id, "This answer was", self.saved_error)
        if run is None:
            self.progress.setText(why)
        else:
            self.open_run.emit(run)

    def cleanup(self) -> None:
        self.bridge.lab_step.disconnect(self._on_step)
        self.bridge.progress.disconnect(self._on_progress)
        self.bridge.busy_changed.disconnect(self._on_busy)


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def accuracy_text(r: ConfidenceResult) -> str:
    """'Accuracy 40 % (2 of 5 right)', and how many verdicts are a person's."""
    if r.accuracy is None:
        return "No question answered"
    right = sum(row.correct for row in r.rows)
    text = f"Accuracy {r.accuracy:.0%} ({right} of {r.answered} right)"
    n = len(r.overrides)
    return text + (f", {n} verdict{'s' if n != 1 else ''} yours" if n else "")


def summary_text(r: ConfidenceResult) -> str:
    """The result in words (rich text): the accuracy, the set, then the sentence."""
    head = (
        f"<b>{_esc(accuracy_text(r))}</b> · {_esc(r.model)} on "
        f"{_esc(r.questions_file)}: {r.answered} of {r.asked} questions, "
        f"{r.samples} samples each at temperature {r.temperature:g}."
    )
    if r.cancelled:
        head += " Cancelled: the figures are those of the questions answered."
    return f"{head}<br>{_esc(r.sentence)}"


def outcome_text(r: ConfidenceResult, run_ids, error: str | None) -> str:
    """What the run took and where its answers are."""
    took = f"{r.seconds:.0f} s, {r.questions_per_minute:.0f} questions a minute"
    if error:
        return f"Answered in {took}. The answers could not be saved to History: {error}"
    if any(run_ids):
        return f"Answered in {took}. {HINT}"
    return f"Answered in {took}."
