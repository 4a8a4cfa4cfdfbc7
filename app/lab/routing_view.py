"""The lab's Routing tab: hybrid inference. The playground's model (the small one)
answers a question set, then a larger installed model answers it too, in the engine
(`lab route`, engine/backends/mlx/route_runs.measure_route); the tab draws the result:
the routing curve and the cost curve (routing_charts.py), APGR and the sentence, and a
row per question: the small answer and its verdict, the signal, the large answer and its.

As every tab: `run_requested`, then `params()` (a RouteParams), then `show_result()` with
the engine's RouteResult. The tab listens to the lab's engine bridge for its progress and
busy (Run and Cancel), and cancels through it (the engine stops between questions and
measures the questions both models answered).
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.lab.question_source import (
    choose_question_file,
    journaled_answer,
    show_question_source,
)
from app.lab.routing_charts import CostCurveChart, RouteCurveChart
from app.widgets.model_picker import fill_models
from engine.backends.base import is_remote
from engine.errors import SettingsError
from engine.lab.confidence import SIGNALS
from engine.lab.questions import load_questions
from engine.lab.routing import (
    DEFAULT_SIGNAL,
    ENTROPY_FLOOR,
    RouteParams,
    escalates,
    is_probability,
    label,
    point_at,
)

WINDOW_LIMIT = 20  # questions a first run answers (0: all); both models answer each
COLUMNS = (
    "line", "question", "small answer", "small", "signal", "large answer", "large", "cascade",
)  # fmt: skip
LINE, QUESTION, SMALL_ANSWER, SMALL, SIGNAL, LARGE_ANSWER, LARGE, AT_TARGET = range(len(COLUMNS))


def verdict(correct: bool | None) -> str:
    """✓ right / ✗ wrong / — (no answer)."""
    return "—" if correct is None else "✓ right" if correct else "✗ wrong"


def row_cells(r, row, threshold: float | None | str = "target") -> tuple[str, ...]:
    """The table's cells for RoutedQuestion `row` of RouteResult `r`, its last one what
    the cascade does at `threshold` ("target": the 95 % point's; None: all escalated)."""
    if threshold == "target":
        t = r.target_point
        threshold = t.threshold if t is not None else ""
    if row.large_correct is None:
        at = "—"
    elif threshold == "":
        at = ""
    else:
        at = "escalated" if escalates(row.signal, threshold) else "kept"
    large = row.large_answer if row.large_answer is not None else f"failed: {row.large_error}"
    return (
        str(row.line),
        row.question,
        _first_line(row.small_answer) or "(nothing)",
        verdict(row.small_correct),
        "—" if row.signal is None else f"{row.signal:.3f}",
        _first_line(large) or "(nothing)",
        verdict(row.large_correct),
        at,
    )


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def summary_text(r) -> str:
    """The result in words (rich text): the two accuracies, APGR, the 95 % point, then
    the sentence."""
    esc = lambda s: html.escape(str(s), quote=False)  # noqa: E731
    if r.apgr is None:
        apgr = f"APGR undefined ({esc(r.why)})" if r.why else "APGR undefined"
    else:
        apgr = (
            f"APGR {r.apgr:.2f} (random 0.50, oracle {r.oracle_apgr:.2f})"
            if r.oracle_apgr is not None
            else f"APGR {r.apgr:.2f}"
        )
    head = (
        f"<b>small {_pct(r.small_accuracy)} · large {_pct(r.large_accuracy)} · {apgr}</b>"
        f" · {esc(r.signal_name)} on {esc(r.questions_file)}: {r.compared} of {r.asked} "
        "questions answered by both"
    )
    t = r.target_point
    if t is not None and r.saving is not None:
        head += (
            f" · {r.target:.0%} point: {t.escalated} escalated, accuracy {_pct(t.accuracy)},"
            f" saves {r.saving:.0%} of the all-large time"
        )
    return f"{head}<br>{esc(r.sentence)}"


def cascade_text(r, p) -> str:
    """The cascade at the chosen threshold, in words (RoutePoint `p` of result `r`)."""
    if p is None:
        return "No question was answered by both models: there is no cascade to show."
    at = "every question escalated" if p.threshold is None else f"below {p.threshold:g}"
    cost = f"{p.relative_cost:.0%} of the time the large model takes on every question"
    return (
        f"Cascade at this threshold ({label(r.signal)} {at}): {p.escalated} of "
        f"{r.compared} escalated ({p.share:.0%}), accuracy {_pct(p.accuracy)} (small alone "
        f"{_pct(r.small_accuracy)}, large alone {_pct(r.large_accuracy)}), {cost}. "
        "Double-click a row to open its answers in the playground."
    )


class RoutingView(QWidget):
    run_requested = Signal()  # the window asks `params()` and runs them
    open_run = Signal(object)  # a RunLog: a question's answer, to show in the playground

    def __init__(self, bridge, parent=None):
        """`bridge`: the lab window's engine bridge (progress, busy, cancel)."""
        super().__init__(parent)
        self.bridge = bridge
        self.questions: str | None = None  # a question file; None: the bundled set
        self.small_path: str | None = None  # the playground's model: the small one
        self.result = None  # the RouteResult shown
        # The cascade's threshold, exact (None: every question escalated): the spin box
        # shows it to 3 decimals, and a measured signal rounded there would escalate
        # other questions than the 95 % point does.
        self.chosen: float | None = None
        self.running = False

        self.small = QLabel("no model loaded")
        self.small.setToolTip("The playground's model answers first (the small model)")
        self.large = QComboBox()
        self.large.setToolTip(
            "The larger model a question is escalated to: installed, or on a server you "
            "added (Server… beside the playground's model picker)"
        )
        self.large.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.large.setMaximumWidth(320)
        fill_models(self.large)
        for i in reversed(range(self.large.count())):  # installed ones load here; servers answer
            data = self.large.itemData(i)
            if not data or not (is_remote(data) or Path(data).exists()):
                self.large.removeItem(i)
        self.signal = QComboBox()
        self.signal.setToolTip("The small model's confidence signal: escalate when it is low")
        for key, (name, _probability) in SIGNALS.items():
            self.signal.addItem(f"{label(key)}", key)
            self.signal.setItemData(self.signal.count() - 1, name, Qt.ToolTipRole)
        self.signal.setCurrentIndex(self.signal.findData(DEFAULT_SIGNAL))
        self.threshold = QDoubleSpinBox()
        self.threshold.setDecimals(3)
        self.threshold.setRange(0.0, 1.0)
        self.threshold.setSingleStep(0.05)
        self.threshold.setToolTip(
            "The cascade at this threshold: the table's last column and the line below the "
            "result say which questions it escalates and what it gives (a run sets it to the "
            "cheapest threshold keeping 95 % of the large model's accuracy)"
        )
        self.threshold.setEnabled(False)
        self.source = QLabel()
        self.choose = QPushButton("Question file…")
        self.choose.setToolTip("Your own questions: JSONL or CSV (question, answers)")
        self.bundled = QPushButton("Bundled set")
        self.bundled.setToolTip("The bundled factual questions")
        self.limit = QSpinBox()
        self.limit.setRange(0, 100_000)
        self.limit.setSpecialValueText("all")
        self.limit.setValue(WINDOW_LIMIT)
        self.limit.setToolTip("Only the first this many questions (all: every one)")
        self.run = QPushButton("Run")
        self.run.setToolTip("Both models answer every question, in the engine, one after the other")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop after the question being answered")
        self.cancel_button.setEnabled(False)
        models = QHBoxLayout()
        for w in (QLabel("Small:"), self.small, QLabel("Large:"), self.large):
            models.addWidget(w)
        models.addWidget(QLabel("Signal"))
        models.addWidget(self.signal)
        models.addWidget(QLabel("Cascade at"))
        models.addWidget(self.threshold)
        models.addStretch(1)
        bar = QHBoxLayout()
        for w in (
            QLabel("Questions:"),
            self.source,
            self.choose,
            self.bundled,
            QLabel("Limit"),
            self.limit,
            self.run,
            self.cancel_button,
        ):
            bar.addWidget(w)
        bar.addStretch(1)
        self.progress = QLabel("")
        self.summary = QLabel(
            "Run to see how much of the large model's accuracy the small one keeps when it "
            "hands over only the questions it is unsure of, and at what cost."
        )
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.RichText)
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.cascade = QLabel("")
        self.cascade.setWordWrap(True)
        self.cascade.hide()  # until a result: the tab's least height stays the Lab's
        self.curve, self.cost = RouteCurveChart(), CostCurveChart()
        charts = QSplitter(Qt.Horizontal)
        for chart in (self.curve, self.cost):
            chart.setMinimumSize(300, 200)  # the Lab fits a 500 px screen in any font
            charts.addWidget(chart)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setWordWrap(False)
        head = self.table.horizontalHeader()
        for c in range(len(COLUMNS)):
            head.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        for c in (QUESTION, SMALL_ANSWER, LARGE_ANSWER):
            head.setSectionResizeMode(c, QHeaderView.Stretch)
        self.table.horizontalHeaderItem(AT_TARGET).setToolTip(
            "What the cascade does with the question at the threshold chosen above (after a "
            "run: the cheapest threshold keeping 95 % of the large model's accuracy)"
        )
        self.table.setToolTip("Double-click a row: its answers in the playground (History)")
        split = QSplitter(Qt.Vertical)
        split.addWidget(charts)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(models)
        layout.addLayout(bar)
        layout.addWidget(self.progress)
        layout.addWidget(self.summary)
        layout.addWidget(self.cascade)
        layout.addWidget(split, 1)
        self._show_source()

        self.run.clicked.connect(self.run_requested.emit)
        self.cancel_button.clicked.connect(self.cancel)
        self.choose.clicked.connect(self._choose_file)
        self.bundled.clicked.connect(lambda: self.set_questions(None))
        self.threshold.valueChanged.connect(self._choose)
        self.table.cellDoubleClicked.connect(self.open_question)
        self.bridge.progress.connect(self._on_progress)
        self.bridge.busy_changed.connect(self._on_busy)

    # -- parameters ---------------------------------------------------------------------
    def set_small(self, model) -> None:
        """The playground's model (a ModelRecord, or None): the small model."""
        local = model is not None and model.backend == "mlx" and Path(model.path).is_dir()
        self.small_path = model.path if local else None
        self.small.setText(model.name if local else "load a local model in the playground")
        self.small.setToolTip(model.path if local else "The small model is the playground's")

    def chosen_large(self) -> str | None:
        return self.large.currentData()

    def choose_large(self, path: str) -> None:
        """Choose `path` as the large model (added when the list lacks it)."""
        i = self.large.findData(path)
        if i < 0:
            self.large.addItem(Path(path).name, path)
            i = self.large.count() - 1
        self.large.setCurrentIndex(i)

    def params(self) -> RouteParams:
        """The run's parameters as chosen on screen (SettingsError: no small or large
        model, the same model twice, a bad question file)."""
        if self.small_path is None:
            raise SettingsError("load a local model in the playground: it is the small model")
        if self.chosen_large() is None:
            raise SettingsError("choose the large model to escalate to")
        load_questions(self.questions)  # a bad file: one sentence, before the engine is asked
        return RouteParams(
            small=self.small_path,
            large=self.chosen_large(),
            questions=self.questions,
            limit=self.limit.value() or None,
            signal=self.signal.currentData(),
        )

    def show_params(self, params: RouteParams) -> None:
        """Show `params`, the experiment the window has just started, and follow it."""
        self.set_questions(params.questions)
        self.limit.setValue(params.limit or 0)
        self.signal.setCurrentIndex(self.signal.findData(params.signal))
        self.choose_large(params.large)
        self.running = True
        self.cancel_button.setEnabled(True)
        self.progress.setText("Loading the small model…")

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
        if self.running:
            self.progress.setText(message)

    def _on_busy(self, busy: bool) -> None:
        if not busy and self.running:  # it ended without a result: the header says why
            self.progress.setText("")
            self.running = False
        self.cancel_button.setEnabled(busy and self.running)

    # -- the result -----------------------------------------------------------------------
    def show_result(self, result) -> None:
        """Draw the engine's RouteResult."""
        self.result, self.running = result, False
        self.cancel_button.setEnabled(False)
        self.curve.show_result(result)
        self.cost.show_result(result)
        self.summary.setText(summary_text(result))
        self.table.setRowCount(len(result.rows))
        probability = is_probability(result.signal)
        low, high = (0.0, 1.0) if probability else (ENTROPY_FLOOR, 0.0)
        t = result.target_point
        chosen = t.threshold if t is not None and t.threshold is not None else high
        self.threshold.blockSignals(True)
        self.threshold.setRange(low, high)
        self.threshold.setSuffix("" if probability else " nats")
        self.threshold.setValue(chosen)
        self.threshold.setEnabled(True)
        self.threshold.blockSignals(False)
        self.chosen = t.threshold if t is not None else chosen
        self.show_cascade()
        where = (
            " Both models' answers are in the History session “Routing”." if result.journal else ""
        )
        if result.journal_error:
            where = f" The answers could not all be saved to History: {result.journal_error}"
        self.progress.setText(f"Answered in {result.seconds:.0f} s.{where}")

    def _choose(self, value: float) -> None:
        """The person set the threshold: the cascade at it."""
        self.chosen = value
        self.show_cascade()

    def show_cascade(self) -> None:
        """The table and the line below the result: the cascade at the chosen threshold."""
        r = self.result
        if r is None:
            return
        threshold = self.chosen
        for i, row in enumerate(r.rows):
            for c, text in enumerate(row_cells(r, row, threshold)):
                item = QTableWidgetItem(text)
                if c in (QUESTION, SMALL_ANSWER, LARGE_ANSWER):
                    item.setToolTip(text)
                if c in (LINE, SIGNAL):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(i, c, item)
        self.cascade.setText(cascade_text(r, point_at(r, threshold)))
        self.cascade.show()

    def open_question(self, index: int, column: int = SMALL_ANSWER) -> None:
        """Open row `index`'s answer in the playground (`open_run`): the large model's
        for its columns, else the small model's (its run shows the other as its partner
        in History's Routing session)."""
        r = self.result
        if r is None or not 0 <= index < len(r.rows):
            return
        row = r.rows[index]
        large = column in (LARGE_ANSWER, LARGE)
        run_id = (row.large_run if large else row.small_run) or row.small_run
        run, why = journaled_answer(run_id, "This question's answers were", r.journal_error)
        if run is None:
            self.progress.setText(why)
        else:
            self.open_run.emit(run)

    def cleanup(self) -> None:
        self.bridge.progress.disconnect(self._on_progress)
        self.bridge.busy_changed.disconnect(self._on_busy)
