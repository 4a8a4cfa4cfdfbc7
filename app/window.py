"""PlaygroundWindow: prompt and streaming output beside live charts.

The window only starts, cancels and draws: every model operation goes through
EngineBridge (engine process + background thread), whose batches arrive at
~30 Hz. Charts redraw when a batch lands; the status line at most 4 times a
second.
"""

from __future__ import annotations

import gc
import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QMainWindow,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app import conversation_flow as flow
from app import window_state
from app.bridge import EngineBridge, error_text
from app.charts.panel import CHARTS, ChartsPanel
from app.conversation import Conversation
from app.journal_sink import journal_window_run
from app.menus import build_menus
from app.model_picker import ModelPicker
from app.prompt_panel import PromptPanel
from app.run_state import RunState
from app.status_line import status_text
from app.window_layout import (
    CENTER_MIN,
    CHARTS_MIN,
    SIDE_MIN,
    build_center,
    build_side,
    build_status,
    fit_to_screen,
    progress_idle,
    show_prefill,
)
from engine.sessions.journal import Journal, RunLog

STATUS_MS = 250
REDRAW_MS = 33  # one chart per tick while streaming: each chart ~6 Hz, no long paint stalls
STREAM_REFRESH_S = 0.25  # while streaming, each chart refreshes at most 4 times a second
DOWNLOAD_DONE = 0.1  # below this fraction the model is still downloading (no byte count)


class PlaygroundWindow(QMainWindow):
    journal_failed = Signal(str)  # from the bridge thread: the history stopped saving

    def __init__(self, bridge: EngineBridge | None = None, load_on_start: bool = True):
        super().__init__()
        self.setWindowTitle("Logitscope — Playground")
        self.bridge = bridge or EngineBridge(parent=self)
        self.state = RunState()
        self.model_record = None
        self.journal: Journal | None = None  # this session's log, created at the first run
        self.viewing: RunLog | None = None  # a past run being shown, or None
        self.conversation = Conversation()
        self.shown_turn: int | None = None  # the turn the answer view shows
        self.editing_turn: int | None = None  # a turn put back in the prompt box to edit
        self.ab, self.ab_result = None, None  # cold-vs-cached A/B in progress / its result
        self.store = window_state.open_store()
        self.side_visible = True
        self._build()
        self._connect()
        fit_to_screen(self)
        window_state.restore(self)
        if load_on_start:
            self.load_model(self.picker.current())

    # -- layout -------------------------------------------------------------------
    def _build(self) -> None:
        self.picker = ModelPicker()
        side = build_side(self)

        self.prompt_panel = pp = PromptPanel(self.controls, self)
        self.prompt, self.prompt_tokens, self.prompt_stack = pp.prompt, pp.tokens_view, pp.stack
        self.token_count, self.show_tokens = pp.token_count, pp.show_tokens
        pp.next_prompt = lambda text: flow.next_prompt(self, text)
        center = build_center(self)

        self.charts = charts = ChartsPanel()
        self.dist_chart, self.temp_chart = charts.dist, charts.temp
        self.timeline_chart, self.throughput_chart = charts.timeline, charts.throughput
        self.context_chart = charts.context

        # No panel can be dragged to nothing: minimum widths, children not collapsible.
        self.split = split = QSplitter()
        split.setChildrenCollapsible(False)
        side_min = max(SIDE_MIN, self.controls.minimumSizeHint().width() + 40)
        for widget, minimum, stretch in ((side, side_min, 0), (center, CENTER_MIN, 2),
                                         (charts, CHARTS_MIN, 3)):  # fmt: skip
            widget.setMinimumWidth(minimum)
            split.addWidget(widget)
            split.setStretchFactor(split.count() - 1, stretch)
        root = QWidget()
        rl = QVBoxLayout(root)
        rl.setContentsMargins(6, 4, 6, 0)
        rl.addWidget(self.picker)
        rl.addWidget(split, 1)
        self.setCentralWidget(root)
        self.actions_ = build_menus(self)

        build_status(self)
        self._progress_idle()
        self.status_timer = QTimer(self)
        self.status_timer.setInterval(STATUS_MS)
        self.redraw_timer = QTimer(self)
        self.redraw_timer.setInterval(REDRAW_MS)
        self._dirty: list[str] = []  # charts waiting for a redraw, oldest first
        self._last_mark = 0.0
        self._stale = False  # tokens arrived that the charts do not show yet

    def toggle_side_panel(self, visible: bool | None = None) -> None:
        self.side_visible = (not self.side_visible) if visible is None else bool(visible)
        self.side_tabs.setVisible(self.side_visible)
        self.actions_["side"].setChecked(self.side_visible)

    def new_conversation(self) -> None:
        """Clear the view and start a new session in the history (nothing is deleted)."""
        if self.bridge.busy:
            self.show_error("Stop the current run before starting a new conversation.")
            return
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        self.state = RunState(model=self.model_record)
        self.viewing, self.editing_turn = None, None
        self.viewing_label.clear()
        self.answer.clear_tokens()
        self.hide_error()
        flow.new_conversation(self)
        self.ab_label.hide()
        self.prompt.setFocus()
        self._redraw()
        self._refresh_status()

    def export_current(self) -> None:
        """Export the run on screen, or what is selected in the history panel."""
        if self.state.run_id and self.history.select_run(self.state.run_id):
            self.toggle_side_panel(True)
            self.side_tabs.setCurrentWidget(self.history)
        self.history._on_export()

    def _connect(self) -> None:
        b = self.bridge
        b.progress.connect(self._on_progress)
        b.model_loaded.connect(self._on_model_loaded)
        b.prefill.connect(self._on_prefill)
        b.tokens.connect(self._on_tokens)
        b.finished.connect(self._on_finished)
        b.failed.connect(self._on_failed)
        b.busy_changed.connect(self._on_busy)
        self.run_button.clicked.connect(self.run)
        self.regen_button.clicked.connect(lambda: flow.regenerate(self))
        self.ab_button.clicked.connect(lambda: flow.start_ab(self))
        self.transcript.turn_link.connect(lambda kind, i: flow.on_link(self, kind, i))
        self.turn_label.turn_link.connect(lambda kind, i: flow.on_link(self, kind, i))
        self.banner.linkActivated.connect(lambda link: flow.on_banner_link(self, link))
        self.stop_button.clicked.connect(self.stop)
        self.follow_button.clicked.connect(lambda: self.select_step(None))
        self.answer.step_clicked.connect(self.select_step)
        self.controls.temperature_changed.connect(self.temp_chart.set_temperature)
        self.picker.model_chosen.connect(self.load_model)
        self.journal_failed.connect(self._on_journal_failed)
        self.history.open_run.connect(self.show_run)
        self.history.message.connect(self.show_notice)
        self.status_timer.timeout.connect(self._refresh_status)
        self.status_timer.start()
        self.redraw_timer.timeout.connect(self._redraw_if_dirty)
        self.redraw_timer.start()
        QShortcut(QKeySequence("Ctrl+Enter"), self, activated=self.run)  # keypad Enter

    # -- actions -------------------------------------------------------------------
    def load_model(self, model: str | None) -> None:
        self.hide_error()
        if not self.bridge.load(model):
            self.show_error("Wait for the current run to finish before switching models.")
            return
        self.status_label.setText("Loading model…")

    def run(self, cold: bool = False) -> None:
        """Send the prompt box as the conversation's next turn (or in place of the turn
        being edited); the last turn's own message (still in the box) or an empty box
        runs the last turn again. `cold`: prefill it all (no reuse of the KV cache)."""
        if self.bridge.busy:
            return
        text, conv = self.prompt.toPlainText(), self.conversation
        turn = flow.next_turn(self, text)
        if turn < len(conv.turns) and self.editing_turn is None:
            flow.regenerate(self, cold=cold)
            return
        if flow.start_turn(self, text, turn, cold, from_box=True):
            self.editing_turn = None

    def begin_run(self, state: RunState, prompt, conversation: dict | None) -> None:
        """Start the engine on `prompt` (text or messages); `state` shows it as it streams."""
        self.state = state
        self.viewing = None
        self.viewing_label.clear()
        self.answer.clear_tokens()
        self._dirty = list(CHARTS)
        self._save()
        model = self.model_record.path if self.model_record else self.picker.current()
        sink = journal_window_run(self, state.prompt, state.settings, conversation)
        self.bridge.generate(prompt, state.settings, model, sink=sink)

    def _on_journal_failed(self, message: str) -> None:
        self.show_error(f"This run is shown but not saved: {message[:1].upper()}{message[1:]}.")

    def show_run(self, run: RunLog) -> None:
        """Show a past run's text and every chart again, without the model; a chat run
        comes back as its conversation, which the next message continues."""
        if self.bridge.busy:
            self.show_error("Stop the current run before opening one from history.")
            return
        state = flow.state_of(run)
        self.hide_error()
        self.show_state(state)
        self.viewing = run
        if run.error:
            self.show_error(f"This run ended with an error: {run.error.message}")
        self.viewing_label.setText(
            f"Viewing “{run.title}” from history ({run.run_id}). Prompt: {run.prompt[:200]}"
        )
        if state.settings.chat_template:
            flow.restore(self, run, state)
            self._redraw()
        else:
            flow.new_conversation(self)

    def show_state(self, state: RunState) -> None:
        """Show a finished run (a history run, an earlier turn) in the answer and charts."""
        self.state = state
        self.answer.clear_tokens()
        self.answer.append_tokens(state.tokens)
        self.follow_button.setEnabled(False)
        self._redraw()
        self._refresh_status()

    def open_compare(self):
        """The Compare window: its own engine process, this session's journal."""
        from app.compare import open_compare

        return open_compare(self)

    def show_notice(self, message: str) -> None:
        self.statusBar().showMessage(message, 8000)

    def stop(self) -> None:
        if self.bridge.busy:
            self.bridge.cancel()

    def select_step(self, step: int | None) -> None:
        self.state.selected = step
        self.answer.select_step(step)
        self.follow_button.setEnabled(step is not None)
        self._redraw()

    def _progress_idle(self) -> None:
        progress_idle(self.progress)

    def show_error(self, message: str, links: bool = False) -> None:
        self.banner.setTextFormat(Qt.RichText if links else Qt.PlainText)
        self.banner.setText(message)
        self.banner.show()

    def hide_error(self) -> None:
        self.banner.hide()
        self.banner.clear()

    # -- engine events ---------------------------------------------------------------
    def _on_busy(self, busy: bool) -> None:
        if not busy and self.journal is not None:
            self.history.refresh()
        self.run_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.picker.setEnabled(not busy)
        if not busy:
            self._progress_idle()
            flow.on_run_ended(self)

    def _on_progress(self, message: str, fraction: float) -> None:
        self.progress.setVisible(True)
        # The download itself reports no fraction: show a busy bar until unpacking starts.
        self.progress.setRange(0, 0 if fraction < DOWNLOAD_DONE else 1000)
        self.progress.setValue(int(fraction * 1000))
        self.progress.setFormat(message)
        self.status_label.setText(message)

    def _on_model_loaded(self, record) -> None:
        same = self.model_record is not None and self.model_record.path == record.path
        self.model_record = record
        self.state.model = record
        if same:  # every run re-announces its model; nothing to reload
            return
        gc.freeze()  # what exists now lives forever: keep it out of GC pauses mid-stream
        self.picker.show_model(record)
        self._progress_idle()
        self.prompt_panel.load_tokenizer(record)
        self._refresh_status()

    def _on_prefill(self, record) -> None:
        self.state.prefill = record
        show_prefill(self.progress, record)

    def _on_tokens(self, records) -> None:
        self.state.add_tokens(records)
        self.answer.append_tokens(records, self.state.tokens)
        self._stale = True  # the redraw timer picks it up, at most every STREAM_REFRESH_S

    def _on_finished(self, record) -> None:
        self.state.done = record
        if record.seed is not None and not self.controls.seed_lock.isChecked():
            self.controls.seed.blockSignals(True)
            self.controls.seed.setValue(record.seed)
            self.controls.seed.blockSignals(False)
        self._dirty, self._stale = list(CHARTS), False
        self._refresh_status()

    def _on_failed(self, record) -> None:
        self.state.error = record
        self._dirty, self._stale = list(CHARTS), False  # show the partial run in full
        self.show_error(error_text(record))
        if record.kind == "model":  # the box shows the model runs will use, not the bad file
            self.picker.refresh(select=self.model_record.path if self.model_record else None)
        self._progress_idle()
        self._refresh_status()

    # -- drawing -----------------------------------------------------------------------
    def _redraw_if_dirty(self) -> None:
        """Redraw one waiting chart: painting all five at once stalls ~50 ms."""
        now = time.monotonic()
        if self._stale and now - self._last_mark >= STREAM_REFRESH_S:  # paint is what costs
            self._stale, self._last_mark = False, now
            self._dirty = [c for c in self._dirty if c not in CHARTS] + list(CHARTS)
        if self._dirty:
            self._draw_chart(self._dirty.pop(0))

    def _redraw(self) -> None:
        """Redraw every chart now (a run starts or ends, a step is selected)."""
        self._dirty = []
        for name in CHARTS:
            self._draw_chart(name)

    def _draw_chart(self, name: str) -> None:
        self.charts.draw(name, self.state, self.controls.temp_spin.value())

    def _refresh_status(self) -> None:
        text = status_text(self.state, self.model_record)
        if text is not None and self.status_label.text() != text:
            self.status_label.setText(text)

    def _save(self) -> None:
        window_state.save(self)

    def closeEvent(self, event) -> None:
        self._save()
        self.cleanup()
        super().closeEvent(event)

    def cleanup(self) -> None:
        self.status_timer.stop()
        self.redraw_timer.stop()
        self.prompt_panel.timer.stop()
        self.bridge.cleanup()
        if getattr(self, "compare_window", None) is not None:
            self.compare_window.cleanup()
        if self.journal is not None:
            self.journal.close()
