"""CompareWindow: two to four lanes side by side, run one after another on one
engine process (so lanes never compete for the cores and their speeds compare
fairly), with a summary table, the lanes' probability timelines on one axis, and
where two lanes share a prompt and model, the first step where they diverge."""

from __future__ import annotations

import secrets

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
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import style_plot
from app.compare.cost import COST_ROWS, LaneCosts
from app.compare.divergence import (
    EMPTY,
    comparable,
    draw_divergence,
    lane_pairs,
    new_divergence_chart,
)
from app.compare.lane import MAX_LANES, CompareLane
from app.compare.summary import SUMMARY_ROWS, draw_overlay, fill_summary
from app.core.bridge import EngineBridge
from app.core.child_window import ChildWindow
from app.core.journal_sink import start_journaled_run
from engine.compare_stats import summarize
from engine.sessions.journal import Journal

LANE_MIN_WIDTH = 330  # px per lane side by side; below, two lanes a row
LANE_MIN_HEIGHT = 330  # a lane in a second row keeps this height (the area scrolls)
TABLE_MIN_WIDTH = 430  # four lanes' columns beside the row names, no scrollbars
DEFAULT_SIZE = (1500, 950)  # shrunk to fit the screen (app/core/window_fit.py)
GEOMETRY_KEY = "compare"


class CompareWindow(ChildWindow, QMainWindow):
    journal_failed = Signal(str)  # from the bridge thread: the history stopped saving

    def __init__(
        self, bridge: EngineBridge | None = None, journal: Journal | None = None, parent=None
    ):
        """`parent`: the playground; Compare is a window of its own, closed with it."""
        super().__init__(parent)
        self.setWindowTitle("Logitscope — Compare")
        self.start_child(GEOMETRY_KEY, DEFAULT_SIZE, bridge)  # app/core/child_window.py
        self.journal = journal
        self.lanes: list[CompareLane] = []
        self.queue: list[CompareLane] = []
        self.running: CompareLane | None = None
        self.comparison_id = None
        self.pair: tuple[CompareLane, ...] | None = None  # lanes of the divergence shown
        self.costs = LaneCosts()  # every run's cost, per lane (app/compare/cost.py)
        self.loaded_spec: str | None = None  # the model spec the engine has loaded
        self._build()
        self.set_lane_count(2)

    # -- layout ---------------------------------------------------------------------
    def _build(self) -> None:
        self.shared_prompt = QPlainTextEdit()
        self.shared_prompt.setPlaceholderText("A prompt for every lane (tick 'same prompt')")
        self.shared_prompt.setFixedHeight(50)
        self.shared_prompt.setTabChangesFocus(True)
        self.same_prompt = QCheckBox("same prompt for all lanes")
        self.same_prompt.setChecked(True)
        self.lane_count = QSpinBox()
        self.lane_count.setRange(2, MAX_LANES)
        self.lane_count.setPrefix("lanes: ")
        self.run_button = QPushButton("Run all  (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop all  (Esc)")
        self.run_button.setShortcut("Ctrl+Return")
        self.stop_button.setShortcut("Esc")
        top = QHBoxLayout()
        top.addWidget(self.shared_prompt, 1)
        for w in (self.same_prompt, self.lane_count, self.run_button, self.stop_button):
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

        self.divergence_info = QLabel("Lanes with the same prompt and model are compared here.")
        self.divergence_info.setWordWrap(True)  # a long list of pairs never widens the window
        bottom = QSplitter()
        bottom.addWidget(self.table)
        bottom.addWidget(self.overlay)
        bottom.addWidget(self.divergence_chart)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setMinimumWidth(TABLE_MIN_WIDTH)
        bottom.setChildrenCollapsible(False)
        for chart in (self.overlay, self.divergence_chart):
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
        self.lane_count.valueChanged.connect(self.set_lane_count)
        self.shared_prompt.textChanged.connect(self._sync_prompts)
        self.same_prompt.toggled.connect(self._sync_prompts)
        self.run_button.clicked.connect(self.run_all)
        self.stop_button.clicked.connect(self.stop_all)
        self.bridge.tokens.connect(self._on_tokens)
        self.bridge.finished.connect(self._on_finished)
        self.bridge.failed.connect(self._on_failed)
        self.bridge.busy_changed.connect(self._on_busy)
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

    def set_lane_count(self, n: int) -> None:
        while len(self.lanes) < n:
            lane = CompareLane(len(self.lanes))
            lane.seed.setValue(len(self.lanes))
            lane.stop_requested.connect(self.stop_lane)
            lane.copy_from.activated.connect(lambda i, lane=lane: self._copy(lane, i))
            lane.tokens.step_clicked.connect(lambda step, lane=lane: self.show_step(lane, step))
            self.lanes.append(lane)
        while len(self.lanes) > n:
            lane = self.lanes.pop()
            lane.setParent(None)
            lane.deleteLater()
        self._arrange_lanes(force=True)
        for lane in self.lanes:
            lane.copy_from.clear()
            lane.copy_from.addItem("copy from…")
            for other in self.lanes:
                if other is not lane:
                    lane.copy_from.addItem(f"Lane {chr(65 + other.index)}", other.index)
        if self.lane_count.value() != n:
            self.lane_count.setValue(n)
        self.table.setColumnCount(n)
        self.table.setHorizontalHeaderLabels([f"Lane {chr(65 + i)}" for i in range(n)])
        self._sync_prompts()

    def set_shared_prompt(self, text: str, same: bool | None = None) -> None:
        """Put `text` in the prompt for every lane; `same` ticks or unticks "same
        prompt for all lanes" (None: as it is)."""
        if same is not None:
            self.same_prompt.setChecked(same)
        self.shared_prompt.setPlainText(text)

    def _sync_prompts(self) -> None:
        """With one prompt for all lanes, every lane's box shows it (read-only)."""
        shared = self.shared_prompt.toPlainText() if self.same_prompt.isChecked() else None
        for lane in self.lanes:
            lane.follow_prompt(shared)

    def _copy(self, lane: CompareLane, combo_index: int) -> None:
        index = lane.copy_from.itemData(combo_index)
        if index is not None:
            lane.copy_settings(self.lanes[index])
        lane.copy_from.setCurrentIndex(0)

    # -- running ----------------------------------------------------------------------
    def lane_prompt(self, lane: CompareLane) -> str:
        if self.same_prompt.isChecked():
            return self.shared_prompt.toPlainText()
        return lane.prompt.toPlainText()

    def run_all(self) -> None:
        if self.running is not None or self.bridge.busy:
            return
        self.comparison_id = secrets.token_hex(4)
        self._clear_comparison("The lanes are compared when they have run.")
        self.queue = []
        for lane in self.lanes:
            prompt = self.lane_prompt(lane)
            lane.reset(prompt, lane.settings())
            if not prompt.strip():
                lane.show_error("The prompt is empty: type one above or in this lane.")
                lane.status.setText("error")
                continue
            self.queue.append(lane)
        self._refresh_summary()
        self._next()

    def _next(self) -> None:
        self.running = None
        while self.queue:
            lane = self.queue.pop(0)
            sink = self._sink(lane)
            if self.bridge.generate(
                lane.state.prompt, lane.state.settings, lane.model_path(), sink=sink
            ):
                self.running = lane
                spec = lane.model_path()
                loading = self.loaded_spec is None or (
                    spec is not None and spec != self.loaded_spec
                )
                lane.status.setText(f"loading {lane.model_name()}…" if loading else "running…")
                return
            self.queue.insert(0, lane)  # the bridge thread is still ending: retry shortly
            QTimer.singleShot(50, self._next)
            return
        self._compare()

    def _sink(self, lane: CompareLane):
        if self.journal is None:
            return None
        info = {"comparison_id": self.comparison_id, "lane": lane.index}
        run_id, sink = start_journaled_run(
            self.journal,
            lane.state.prompt,
            lane.state.settings.to_dict(),
            None,
            self.journal_failed.emit,
            comparison=info,
        )
        lane.name_run(run_id)
        return sink

    def stop_lane(self, lane: CompareLane) -> None:
        if lane in self.queue:
            self.queue.remove(lane)
            lane.status.setText("skipped")
        elif lane is self.running:
            self.bridge.cancel()

    def stop_all(self) -> None:
        for lane in self.queue:
            lane.status.setText("skipped")
        self.queue = []
        if self.running is not None:
            self.bridge.cancel()

    def _on_model(self, record) -> None:
        if self.running is not None:
            self.running.set_model(record)
            self.loaded_spec = self.running.model_path()
            if self.running.status.text().startswith("loading"):
                self.running.status.setText("running…")

    def _on_tokens(self, records) -> None:
        if self.running is not None:
            self.running.add_tokens(records)

    def _on_finished(self, record) -> None:
        if self.running is not None:
            self.running.finish(record)
            self.costs.add(self.running, record)
            self.running.status.setText(record.finish_reason)
            self.running.redraw()

    def _on_failed(self, record) -> None:
        if self.running is not None:
            self.running.finish(record)
            self.running.show_error(record.message)
            self.running.status.setText("error")

    def _on_busy(self, busy: bool) -> None:
        if not busy:
            self._refresh_summary()
            self._next()

    def _redraw_running(self) -> None:
        if self.running is not None:
            self.running.redraw()
            self._draw_overlay()

    # -- comparing -----------------------------------------------------------------------
    def summaries(self) -> list:
        return [summarize(lane.state.tokens, lane.state.done) for lane in self.lanes]

    def _refresh_summary(self) -> None:
        fill_summary(self.table, self.lanes, self.summaries())
        self.costs.fill(self.table, self.lanes, len(SUMMARY_ROWS))
        self._draw_overlay()

    def _draw_overlay(self) -> None:
        draw_overlay(self.overlay.getPlotItem(), self.lanes)

    def refresh_comparison(self) -> None:
        """The summary table, the overlay and the divergence of the lanes as they are."""
        self._refresh_summary()
        self._compare()

    def _clear_comparison(self, note: str) -> None:
        """No divergence on screen (a new Run all: an older one would mislead)."""
        for lane in self.lanes:
            lane.mark_divergence(None)
        self.pair = None
        self.divergence_bars, self.divergence_ids = draw_divergence(
            self.divergence_chart.getPlotItem(), (), 0, EMPTY
        )
        self.divergence_info.setText(note)

    def _compare(self) -> None:
        """Mark the first differing step of every lane pair with one prompt and model."""
        for lane in self.lanes:
            lane.mark_divergence(None)
        self.pair = None
        notes = []
        for a, b, step in lane_pairs(self.lanes):
            name = f"{chr(65 + a.index)}/{chr(65 + b.index)}"
            if step is None:
                notes.append(f"Lanes {name}: identical tokens, no divergence")
                continue
            notes.append(f"Lanes {name} diverge at step {step}")
            for lane in (a, b):
                if lane.divergence is None:
                    lane.mark_divergence(step)
            if self.pair is None:  # every lane sharing a's prompt and model
                self.pair = tuple(x for x in self.lanes if x.state.n and comparable(x, a))
                self.show_step(a, step)
        if self.pair is None:  # nothing comparable this time: never show an older comparison
            self.divergence_bars, self.divergence_ids = draw_divergence(
                self.divergence_chart.getPlotItem(), (), 0
            )
        self.divergence_info.setText(" · ".join(notes) or "No two lanes share a prompt and model.")

    def show_runs(self, states: list) -> None:
        """Show finished runs as lanes (app/compare/runs.py); nothing is run."""
        from app.compare.runs import show_runs

        show_runs(self, states)

    def show_step(self, lane: CompareLane, step: int) -> None:
        """The distributions at `step` of every lane in `lane`'s group, on one chart."""
        lanes = self.pair if self.pair and lane in self.pair else (lane,)
        self.divergence_bars, self.divergence_ids = draw_divergence(
            self.divergence_chart.getPlotItem(), lanes, step
        )

    def stop_child(self) -> None:
        self.timer.stop()  # before the engine stops (ChildWindow.cleanup)
