"""CompareWindow: two to four lanes side by side, run one after another on one
engine process (so lanes never compete for the cores and their speeds compare
fairly), with a summary table, the lanes' probability timelines on one axis, and
where two lanes share a prompt and model, the first step where they diverge.

It is the view of a Comparison (app/session/comparison.py), which owns the lanes,
their runs and the divergence: the window draws what it announces, turns a
person's clicks into its methods, and starts each lane's run on its engine."""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import style_plot
from app.compare.cost import COST_ROWS, LaneCosts
from app.compare.divergence import EMPTY, NONE_DIVERGED, draw_divergence, new_divergence_chart
from app.compare.lane import LANE_COLORS, CompareLane
from app.compare.read_view import ReadView
from app.compare.reading import pair_button, start_lane_run
from app.compare.summary import SUMMARY_ROWS, draw_overlay, fill_summary
from app.core.bridge import EngineBridge
from app.core.child_window import ChildWindow
from app.core.journal_sink import start_journaled_run
from app.session.comparison import (
    LANE_MAX_TOKENS,
    MAX_LANES,
    MIN_LANES,
    Comparison,
    Lane,
    lane_name,
)
from engine.errors import SettingsError
from engine.run.compare_stats import summarize
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal

LANE_MIN_WIDTH = 330  # px per lane side by side; below, two lanes a row
LANE_MIN_HEIGHT = 330  # a lane in a second row keeps this height (the area scrolls)
TABLE_MIN_WIDTH = 430  # four lanes' columns beside the row names, no scrollbars
DEFAULT_SIZE = (1500, 950)  # shrunk to fit the screen (app/core/window_fit.py)
GEOMETRY_KEY = "compare"


def untouched(lane: Lane) -> bool:
    """Lane `lane` is as the comparison made it: its default settings, nothing run."""
    made = SamplingSettings(max_tokens=LANE_MAX_TOKENS, seed=lane.index)
    state = lane.state
    return lane.settings == made and not lane.runs and not state.tokens and state.done is None


class CompareWindow(ChildWindow, QMainWindow):
    journal_failed = Signal(str)  # from the bridge thread: the history stopped saving

    def __init__(
        self,
        comparison: Comparison | None = None,
        bridge: EngineBridge | None = None,
        journal: Journal | None = None,
        parent=None,
        playground_settings: Callable[[], SamplingSettings] | None = None,
    ):
        """`comparison`: the lanes it shows (the session's; a new one by default).
        `parent`: the playground; Compare is a window of its own, closed with it.
        `playground_settings`: the playground's sampling settings now; a lane still on
        the comparison's defaults starts from them (its own seed kept)."""
        super().__init__(parent)
        self.playground_settings = playground_settings
        self.setWindowTitle("Logitscope — Compare")
        self.start_child(GEOMETRY_KEY, DEFAULT_SIZE, bridge)  # app/core/child_window.py
        self.comparison = comparison if comparison is not None else Comparison()
        self.journal = journal
        self.lanes: list[CompareLane] = []  # the views of the comparison's lanes
        self._drawing = False
        self._build()
        events = self.comparison.events
        self._subscriptions = (
            (events.lanes_changed, self._on_lanes_changed),
            (events.lane_changed, self._on_lane_changed),
            (events.prompt_changed, self._on_prompt_changed),
            (events.compared, self._on_compared),
            (events.step_selected, self._on_step_selected),
            (events.read_row_selected, self.read_view.show_row),
        )
        for signal, slot in self._subscriptions:
            signal.connect(slot)
        self._on_lanes_changed(len(self.comparison.lanes))
        self._on_prompt_changed(self.comparison.shared_prompt, self.comparison.same_prompt)
        self._on_compared(self.comparison.note)
        self._on_step_selected(self.comparison.selected)

    # -- layout ---------------------------------------------------------------------
    def _build(self) -> None:
        self.shared_prompt = QPlainTextEdit()
        self.shared_prompt.setPlaceholderText("A prompt for every lane (tick 'same prompt')")
        self.shared_prompt.setFixedHeight(50)
        self.shared_prompt.setTabChangesFocus(True)
        self.same_prompt = QCheckBox("same prompt for all lanes")
        self.same_prompt.setChecked(True)
        self.read_all = QCheckBox("read, don't generate")
        self.read_all.setToolTip(
            "Every lane reads its text through its model (each token's probability and "
            "rank) instead of generating; a lane's own Mode box sets it for that lane"
        )
        self.pair_button = pair_button(self, self.read_pair)  # the shipped statement pairs
        self.lane_count = QSpinBox()
        self.lane_count.setRange(MIN_LANES, MAX_LANES)
        self.lane_count.setPrefix("lanes: ")
        self.run_button = QPushButton("Run all  (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop all  (Esc)")
        self.run_button.setShortcut("Ctrl+Return")
        self.stop_button.setShortcut("Esc")
        top = QHBoxLayout()
        top.addWidget(self.shared_prompt, 1)
        for w in (self.same_prompt, self.read_all, self.pair_button, self.lane_count):
            top.addWidget(w)
        for w in (self.run_button, self.stop_button):
            top.addWidget(w)
        # Lanes in a grid: side by side when the window is wide, two per row when it is
        # not; scrolled (never squeezed) when they do not fit the height.
        self.lane_grid = QGridLayout()
        self.lane_grid.setContentsMargins(0, 0, 0, 0)
        lane_box = QWidget()
        lane_box.setLayout(self.lane_grid)
        self.lane_scroll = lanes = QScrollArea()
        lanes.setWidgetResizable(True)
        lanes.setFrameShape(QFrame.NoFrame)
        lanes.setWidget(lane_box)
        self.lane_columns = 0
        self.table = QTableWidget(len(SUMMARY_ROWS) + len(COST_ROWS), 0)
        self.table.setVerticalHeaderLabels([r[0] for r in SUMMARY_ROWS] + list(COST_ROWS))
        self.overlay = pg.PlotWidget()
        style_plot(
            self.overlay.getPlotItem(), "Probability timelines", left="p(chosen)", bottom="step"
        )
        # Lane colours are named in the chart titles: no legend box over the data.
        self.divergence_chart = new_divergence_chart()  # an empty state until a run
        self.read_view = ReadView(self.comparison, LANE_COLORS)  # two reads, in its place
        self.divergence_area = QStackedWidget()
        self.divergence_area.addWidget(self.divergence_chart)
        self.divergence_area.addWidget(self.read_view)

        self.divergence_info = QLabel()
        self.divergence_info.setWordWrap(True)  # a long list of pairs never widens the window
        bottom = QSplitter()
        bottom.addWidget(self.table)
        bottom.addWidget(self.overlay)
        bottom.addWidget(self.divergence_area)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setMinimumWidth(TABLE_MIN_WIDTH)
        bottom.setChildrenCollapsible(False)
        for chart in (self.overlay, self.divergence_area):
            chart.setMinimumWidth(220)
            chart.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Expanding)
        bottom.setSizes([TABLE_MIN_WIDTH, 520, 520])
        split = QSplitter(Qt.Vertical)
        split.addWidget(lanes)
        split.addWidget(bottom)
        split.setSizes([600, 330])
        split.setChildrenCollapsible(False)
        root = QWidget()
        layout = QVBoxLayout(root)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        layout.addWidget(self.divergence_info)
        self.setCentralWidget(root)
        # A person's edits: each one a method of the comparison.
        self.lane_count.valueChanged.connect(self.set_lane_count)
        self.shared_prompt.textChanged.connect(self._on_shared_prompt)
        self.same_prompt.toggled.connect(self._on_shared_prompt)
        self.read_all.clicked.connect(lambda on: self.comparison.set_reading(None, on))
        self.run_button.clicked.connect(self.run_all)
        self.stop_button.clicked.connect(self.stop_all)
        self.bridge.tokens.connect(self._on_tokens)
        self.bridge.finished.connect(self._on_finished)
        self.bridge.failed.connect(self._on_failed)
        self.bridge.busy_changed.connect(self._on_busy)
        self.bridge.progress.connect(self._on_progress)
        self.bridge.model_loaded.connect(self._on_model)
        self.journal_failed.connect(
            lambda m: self.statusBar().showMessage(f"Runs are shown but not saved: {m}", 15000)
        )
        self.timer = QTimer(self)
        self.timer.setInterval(250)  # lanes' strips and the overlay: 4 Hz while streaming
        self.timer.timeout.connect(self._redraw_running)
        self.timer.start()

    def _arrange_lanes(self, force: bool = False) -> None:
        cols = len(self.lanes) if self.width() >= LANE_MIN_WIDTH * max(len(self.lanes), 1) else 2
        cols = max(1, min(cols, len(self.lanes)))
        if cols == self.lane_columns and not force:
            return
        self.lane_columns = cols
        for lane in self.lanes:
            self.lane_grid.removeWidget(lane)
        for i, lane in enumerate(self.lanes):
            self.lane_grid.addWidget(lane, i // cols, i % cols)
            lane.set_base_height(LANE_MIN_HEIGHT if cols < len(self.lanes) else 0)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange_lanes()

    # -- a person's edits ---------------------------------------------------------------------
    def set_lane_count(self, n: int) -> None:
        """Two to four lanes (not while lanes run: the count stays as it is)."""
        self.comparison.set_lane_count(n)
        self._guarded(lambda: self.lane_count.setValue(len(self.comparison.lanes)))

    def _on_shared_prompt(self) -> None:
        if not self._drawing:
            self.comparison.set_shared_prompt(
                self.shared_prompt.toPlainText(), same=self.same_prompt.isChecked()
            )

    def _guarded(self, draw) -> None:
        """Draw without the widgets' own signals calling the comparison back."""
        self._drawing = True
        try:
            draw()
        finally:
            self._drawing = False

    # -- drawing the comparison ---------------------------------------------------------------
    def _on_lanes_changed(self, n: int) -> None:
        while len(self.lanes) > n:
            lane = self.lanes.pop()
            lane.cleanup()
            lane.setParent(None)
            lane.deleteLater()
        while len(self.lanes) < n:
            self._start_from_playground(self.comparison.lanes[len(self.lanes)])
            lane = CompareLane(self.comparison, len(self.lanes))
            lane.stop_requested.connect(self.stop_lane)
            self.lanes.append(lane)
        self._arrange_lanes(force=True)
        self._guarded(lambda: self.lane_count.setValue(n))
        self.table.setColumnCount(n)
        self.table.setHorizontalHeaderLabels([f"Lane {lane_name(i)}" for i in range(n)])
        self._refresh_summary()

    def _start_from_playground(self, lane: Lane) -> None:
        """A lane on the comparison's defaults (never set, never run) takes the
        playground's settings, with its own seed: lanes start as the person's runs do."""
        if self.playground_settings is None or not untouched(lane):
            return
        try:
            settings = self.playground_settings().with_(seed=lane.settings.seed).validate()
        except SettingsError:  # the playground's boxes hold something invalid: as it was
            return
        self.comparison.set_settings(lane.index, settings)

    def _on_prompt_changed(self, text: str, same: bool) -> None:
        def draw():
            if self.shared_prompt.toPlainText() != text:
                self.shared_prompt.setPlainText(text)
            self.same_prompt.setChecked(same)

        self._guarded(draw)

    def _on_lane_changed(self, _index: int | None) -> None:
        if len(self.lanes) == len(self.comparison.lanes):  # not while lanes are remade
            self._refresh_summary()
        self._guarded(lambda: self.read_all.setChecked(self.comparison.all_reading))

    def _on_compared(self, note: str) -> None:
        """The note; two reads compared take the divergence chart's place."""
        self.divergence_info.setText(note)
        self.read_view.draw()
        reads = self.comparison.read_comparison is not None
        self.divergence_area.setCurrentWidget(self.read_view if reads else self.divergence_chart)

    def _on_step_selected(self, selected) -> None:
        """The distributions at the selected step of every lane in its group, on one chart."""
        lanes = [self.lanes[lane.index] for lane in self.comparison.shown_lanes()]
        step = selected[1] if selected is not None else 0
        empty = NONE_DIVERGED if self.comparison.compared else EMPTY
        self.divergence_bars, self.divergence_ids = draw_divergence(
            self.divergence_chart.getPlotItem(), lanes, step, empty
        )

    def _refresh_summary(self) -> None:
        fill_summary(self.table, self.lanes, self.summaries())
        costs = LaneCosts()  # every run each lane finished here (the comparison's)
        for lane in self.comparison.lanes:
            for done in lane.runs:
                costs.add(lane, done)
        costs.fill(self.table, self.comparison.lanes, len(SUMMARY_ROWS))
        self._draw_overlay()

    def _draw_overlay(self) -> None:
        draw_overlay(self.overlay.getPlotItem(), self.lanes)

    def summaries(self) -> list:
        return [summarize(lane.state.tokens, lane.state.done) for lane in self.comparison.lanes]

    # -- running ------------------------------------------------------------------------------
    @property
    def running(self) -> int | None:
        """The lane in flight (the comparison's)."""
        return self.comparison.running

    @property
    def queue(self) -> list[int]:
        """The lanes waiting to run (the comparison's)."""
        return self.comparison.queue

    def run_all(self) -> None:
        """Run every lane, one after another (Ctrl+Enter)."""
        if not self.bridge.busy and self.comparison.run_all():
            self._next()

    def _next(self) -> None:
        lane = self.comparison.next_lane
        if lane is None or self.closed:
            return
        if start_lane_run(self.bridge, lane, self._sink(lane.index)):  # a read, or generate
            self.comparison.start(lane.index)
        else:  # the bridge thread is still ending: retry shortly
            QTimer.singleShot(50, self._next)

    def _sink(self, index: int):
        if self.journal is None:
            return None
        lane = self.comparison.lanes[index]
        info = {"comparison_id": self.comparison.comparison_id, "lane": index}
        run_id, sink = start_journaled_run(
            self.journal,
            lane.state.prompt,
            lane.state.settings.to_dict(),
            None,
            self.journal_failed.emit,
            comparison=info,
        )
        self.comparison.name_run(index, run_id)
        return sink

    def read_pair(self, pair) -> None:
        """Two lanes read a shipped pair of statements with lane A's model, at once."""
        if not self.bridge.busy and self.comparison.load_pair(pair.a, pair.b):
            self.run_all()

    def stop_lane(self, index: int) -> None:
        """Stop lane `index`: skipped while it waits, cancelled while it runs."""
        if self.comparison.stop(index):
            self.bridge.cancel()

    def stop_all(self) -> None:
        if self.comparison.stop_all():
            self.bridge.cancel()

    # What the engine reports, for the lane in flight (nothing once the window closed).
    def _on_model(self, record) -> None:
        if not self.closed:
            self.comparison.model_loaded(record)

    def _on_progress(self, message: str, fraction: float) -> None:
        """The load of the lane in flight's model: on that lane (it can take minutes)."""
        if not self.closed and self.comparison.running is not None:
            self.lanes[self.comparison.running].show_load(message, fraction)

    def _on_tokens(self, records) -> None:
        if not self.closed:
            self.comparison.add_tokens(records)

    def _on_finished(self, record) -> None:
        if not self.closed:
            self.comparison.finish(record)

    def _on_failed(self, record) -> None:
        if not self.closed:
            self.comparison.fail(record)

    def _on_busy(self, busy: bool) -> None:
        if not busy and not self.closed:
            self.comparison.run_ended()
            self._next()

    def _redraw_running(self) -> None:
        if self.comparison.running is not None:
            self.lanes[self.comparison.running].redraw()
            self._draw_overlay()

    def show_runs(self, states: list) -> None:
        """Show finished runs (two branches of one answer, say) as the lanes; nothing runs."""
        self.comparison.show_runs(states)

    def stop_child(self) -> None:
        """Before the engine stops (ChildWindow.cleanup): its timer, the lanes' runs, and
        no more drawing of the comparison (it outlives the window)."""
        self.timer.stop()
        self.comparison.engine_gone()
        for signal, slot in self._subscriptions:
            signal.disconnect(slot)
        for lane in self.lanes:
            lane.cleanup()
