"""PlaygroundWindow: prompt and streaming output beside live charts.

The window only starts, cancels and draws. Its state is the Session model
(app/session/, no Qt), changed through one adapter (SessionSignals) whose
signals every view follows: the answer, the five charts, the status line, the
transcript, Inside. Model work goes through EngineBridge (engine process +
background thread), whose batches arrive at ~30 Hz. Charts redraw when a batch
lands; the status line at most 4 times a second.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QMainWindow, QVBoxLayout, QWidget

from app.branches.flow import BranchUi
from app.branches.wiring import wire_branches
from app.charts.panel import ChartsPanel
from app.core.accessibility import watch
from app.core.bridge import EngineBridge, error_text
from app.core.journal_sink import journal_session_run, open_journal
from app.core.quit import quit_app
from app.core.session_signals import SessionSignals
from app.playground.conversation_flow import FlowUi, TurnFlow
from app.playground.prompt_panel import PromptPanel
from app.playground.read_flow import start_engine_run
from app.playground.right_size_flow import RightSizeFlow, RightSizeUi
from app.playground.run_view import BACK_LINK, CONTINUE_LINK, PARTNER_LINK, RunView
from app.session import Session
from app.shell import tour_wiring, window_state
from app.shell.child_windows import ChildWindows
from app.shell.file_drop import install as install_file_handling
from app.shell.layout import (
    build_center,
    build_side,
    build_split,
    build_status,
    first_size,
    progress_idle,
    show_prefill,
    show_progress,
)
from app.shell.menus import build_menus
from app.shell.serve_wiring import wire_serve
from app.shell.startup_model import load_on_start as start_model
from app.widgets.model_picker import ModelPicker, record_label
from app.widgets.right_size_control import RightSizeControl
from engine.sessions.journal import RunLog


class PlaygroundWindow(QMainWindow):
    journal_failed = Signal(str)  # from the bridge thread: the history stopped saving

    def __init__(self, bridge: EngineBridge | None = None, load_on_start: bool = True):
        super().__init__()
        self.setWindowTitle("Logitscope — Playground")
        self.bridge = bridge or EngineBridge(parent=self)
        self.model = SessionSignals(Session(), self)
        self.session = self.model.session
        self.store = window_state.open_store()
        self.side_visible = True
        self._busy = False
        self._build()
        journal = lambda: open_journal(self.session, self._on_journal_failed)  # noqa: E731
        self.windows = ChildWindows(
            self,
            self.model,
            journal,
            self.prompt.toPlainText,
            # what the Lab and Compare start from: the seed shown, none drawn into the box
            lambda: (
                self.model_record,
                self.prompt.toPlainText(),
                self.controls.settings(draw_seed=False),
            ),
        )
        self.branch_flow, self.branches_view = wire_branches(
            self.model,
            self.bridge,
            self.controls,
            self.side_tabs,
            (self.output, self.dist_chart),
            BranchUi(self.show_error, self.hide_error, self.show_notice, self.begin_run),
            self.open_compare,
            journal,
            lambda: self.toggle_side_panel(True),
        )
        self._connect()
        watch(self)  # accessible names for every control (app/core/accessibility.py)
        install_file_handling(self)  # drops, Open Recent (app/shell/file_drop.py)
        self.serving = wire_serve(self)  # Server ▸ Serve on port…, Follow requests (app/serve/)
        self.tour = tour_wiring.wire_tour(self)  # Help ▸ Tour… (app/tour/)
        self._fit_to_screen()
        _restored, side = window_state.restore(
            self.store, self.prompt, self.controls, self.picker, self, self.split
        )
        if not side:
            self.toggle_side_panel(False)
        if load_on_start:  # the remembered model; a server that is down falls back
            start_model(self.bridge, self.picker.current(), self.load_model, self.show_error)

    # -- the session, as views and tests read it ----------------------------------------
    @property
    def _dirty(self) -> list[str]:
        """Charts still waiting for a redraw (tests wait for none)."""
        return self.run_view.dirty

    @property
    def _stale(self) -> bool:
        return self.run_view.stale

    @property
    def state(self):
        """The run on screen."""
        return self.session.shown

    @property
    def conversation(self):
        return self.session.conversation

    @property
    def journal(self):
        return self.session.journal

    @property
    def model_record(self):
        """The loaded model (the run on screen may have run with another)."""
        return self.session.model

    # -- layout -------------------------------------------------------------------
    def _build(self) -> None:
        self.picker = ModelPicker()
        side = build_side(self.session.history)
        self.side_tabs, self.controls, self.history = side.tabs, side.controls, side.history
        self.prompt_panel = pp = PromptPanel(self.controls, self.session, self)
        self.prompt, self.prompt_tokens, self.prompt_stack = pp.prompt, pp.tokens_view, pp.stack
        self.token_count, self.show_tokens = pp.token_count, pp.show_tokens
        c = build_center(pp)
        self.run_button, self.stop_button = c.run_button, c.stop_button
        self.follow_button = c.follow_button
        self.regen_button, self.ab_button, self.banner = c.regen_button, c.ab_button, c.banner
        self.viewing_label, self.output, self.thinking = c.viewing_label, c.output, c.thinking
        self.answer, self.transcript, self.turn_label = c.answer, c.transcript, c.turn_label
        self.ab_label = c.ab_label
        self.shading = c.shading
        self.charts = charts = ChartsPanel()
        self.dist_chart, self.temp_chart = charts.dist, charts.temp
        self.timeline_chart, self.throughput_chart = charts.timeline, charts.throughput
        self.context_chart = charts.context

        self.split = build_split(side.tabs, c.widget, charts, self.controls)
        root = QWidget()
        rl = QVBoxLayout(root)
        rl.setContentsMargins(6, 4, 6, 0)
        rl.addWidget(self.picker)
        rl.addWidget(self.split, 1)
        self.setCentralWidget(root)
        self.flow = TurnFlow(
            self.model,
            self.bridge,
            self.controls,
            pp,
            FlowUi(
                show_error=self.show_error,
                hide_error=self.hide_error,
                show_notice=self.show_notice,
                start_run=self.begin_run,
                show_ab=self._show_ab,
                drop_oldest=lambda: self.actions_["drop_oldest"].isChecked(),
            ),
        )
        self.right_size = RightSizeControl(self._small_spec)
        self.picker.add_beside(self.right_size)
        self.right_size_flow = RightSizeFlow(
            self.model,
            self.flow,
            RightSizeUi(
                sizing=self.right_size.sizing,
                small_spec=self._small_spec,
                label=self.picker.label_of,
                record_label=record_label,
                show_error=self.show_error,
                refresh_line=lambda: self.run_view.refresh_line(),
            ),
        )
        self.actions_ = build_menus(self.menuBar(), self._menu_slots())
        self.status_label, self.progress = build_status(self.statusBar())
        self._progress_idle()
        self.run_view = RunView(
            self.model,
            self.answer,
            charts,
            self.status_label,
            self.follow_button,
            self.viewing_label,
            self.controls.temp_spin.value,
            self,
        )

    def _small_spec(self) -> str | None:
        """The loaded model's spec (the picker's choice before any is loaded)."""
        return self.model_record.path if self.model_record else self.picker.current()

    def _menu_slots(self) -> dict:
        from app.dialogs.about import show_about

        # fmt: skip below: a table; one name -> slot pair a line would be 20 alike lines.
        return {
            "new": self.new_conversation, "open": self.picker.open_dialog,
            "get_models": self.picker.get_models_dialog,
            "server": self.picker.add_server, "import": self.history._on_import,
            "export": self.export_current, "quit": quit_app, "run": self.run,
            "cold": lambda: self.run(cold=True), "regen": lambda: self.flow.regenerate(),
            "ab": self.flow.start_ab, "stop": self.stop, "follow": lambda: self.select_step(None),
            "side": self.toggle_side_panel, "tokens": self.show_tokens.toggle,
            "compare": self.open_compare, "inside": lambda: self.open_inside(),
            "lab": self.open_lab,
            "about": lambda: show_about(
                self,
                getattr(self.model_record, "device", None),
                getattr(self.model_record, "compute", None),
            ),
        }  # fmt: skip

    def _fit_to_screen(self) -> None:
        screen = self.screen().availableGeometry() if self.screen() else None
        width, height, sizes, side = first_size(screen)
        self.resize(width, height)
        self.split.setSizes(sizes)
        if not side:
            self.toggle_side_panel(False)

    def toggle_side_panel(self, visible: bool | None = None) -> None:
        self.side_visible = (not self.side_visible) if visible is None else bool(visible)
        self.side_tabs.setVisible(self.side_visible)
        self.actions_["side"].setChecked(self.side_visible)

    def new_conversation(self) -> None:
        """Clear the view and start a new session in the history (nothing is deleted)."""
        if self.bridge.busy:
            self.show_error("Stop the current run before starting a new conversation.")
            return
        self.hide_error()
        self._show_ab(None)
        self.model.new_conversation()
        self.prompt.setFocus()

    def export_current(self) -> None:
        """Export what is selected in the history panel when it is on screen (a session
        or a run), else the run on screen."""
        session, _run = self.session.history.selected()
        chosen = session is not None and self.history.isVisible()
        if not chosen and self.state.run_id and self.session.history.select_run(self.state.run_id):
            self.toggle_side_panel(True)
            self.side_tabs.setCurrentWidget(self.history)
        self.history.export_selection()

    def _connect(self) -> None:
        b = self.bridge
        b.progress.connect(self._on_progress)
        b.model_loaded.connect(self._on_model_loaded)
        b.prefill.connect(self._on_prefill)
        b.tokens.connect(self.model.add_tokens)
        b.finished.connect(self._on_finished)
        b.failed.connect(self._on_failed)
        b.busy_changed.connect(self._on_busy)
        self.model.conversation_changed.connect(self._on_conversation)
        self.run_button.clicked.connect(self.run)
        self.regen_button.clicked.connect(lambda: self.flow.regenerate())
        self.ab_button.clicked.connect(self.flow.start_ab)
        self.transcript.turn_link.connect(self.flow.on_link)
        self.turn_label.turn_link.connect(self.flow.on_link)
        self.banner.linkActivated.connect(
            lambda link: self.flow.on_banner_link(link, self.new_conversation)
        )
        self.stop_button.clicked.connect(self.stop)
        self.follow_button.clicked.connect(lambda: self.select_step(None))
        self.answer.step_clicked.connect(self.select_step)
        self.answer.inspect_requested.connect(lambda step: self.open_inside(step))
        self.controls.temperature_changed.connect(  # a guest's chart keeps the T it ran at
            lambda _t: self.temp_chart.set_temperature(self.run_view.marked_temperature())
        )
        self.picker.model_chosen.connect(self.load_model)
        self.picker.use_sampling(self.controls)  # sampling presets in Load settings…
        self.journal_failed.connect(self._on_journal_failed)
        self.history.open_run.connect(self.show_run)
        self.viewing_label.linkActivated.connect(self._on_guest_link)
        self.model.shown_changed.connect(lambda state: self.shading.show_run(state.reading))
        self.history.message.connect(self.show_notice)
        QShortcut(QKeySequence("Ctrl+Enter"), self, activated=self.run)  # keypad Enter

    # -- actions -------------------------------------------------------------------
    def load_model(self, model: str | None) -> None:
        self.hide_error()
        if not self.bridge.load(model):
            self.show_error("Wait for the current run to finish before switching models.")
            return
        self.status_label.setText("Loading model…")

    def run(self, cold: bool = False) -> None:
        """Send the prompt box as the conversation's next turn (see TurnFlow.run_box).
        `cold`: prefill it all (no reuse of the KV cache)."""
        self.flow.run_box(cold)

    def begin_run(self, state, prompt, conversation, continuation=None, parent=()) -> None:
        """Start the engine on `prompt` (text or messages; a read reads state.prompt);
        `state`, already on screen (TurnFlow or BranchFlow put it there through the
        session), shows it as it streams. A branch continues `parent` (token records)
        at its continuation."""
        self._save()
        model = state.runs_on or self._small_spec()  # runs_on: the right-sized escalation
        sink = journal_session_run(self.session, state, conversation, self.journal_failed.emit)
        branch = (continuation, parent)
        start_engine_run(self.bridge, self.controls, state, prompt, model, sink, branch)

    def _on_journal_failed(self, message: str) -> None:
        self.show_error(f"This run is shown but not saved: {message[:1].upper()}{message[1:]}.")

    def show_run(self, run: RunLog) -> None:
        """Show a past run's text and every chart again, without the model; a chat run
        comes back as its conversation, which the next message continues."""
        self.flow.reopen(run, self.session.history.sessions)

    def _on_guest_link(self, link: str) -> None:
        if link == BACK_LINK:
            self.flow.back_to_own()
        elif link == CONTINUE_LINK:
            self.continue_here()
        elif link == PARTNER_LINK:
            self.right_size_flow.show_partner()

    def continue_here(self) -> None:
        """Continue from here: the run shown from elsewhere becomes the person's own, and
        its settings, mode and model are taken (the notice says which)."""
        if self.bridge.busy:
            self.show_error("Stop the current run before continuing another one.")
            return
        had = len(self.session.own_conversation) or self.session.guest is None
        state = self.flow.continue_here()
        if state is None:
            return
        self.controls.apply(state.settings)
        self.controls.set_reading(state.reading)
        model, loaded = state.model, self.model_record
        switch = model is not None and (loaded is None or model.path != loaded.path)
        if switch:
            self.load_model(model.path)
        s = state.settings
        what = "reading" if state.reading else f"T {s.temperature:g}, max {s.max_tokens}"
        name = model.name if model is not None else "the loaded model"
        kept = "; the conversation you had is in History" if had else ""
        loading = " (loading)" if switch else ""
        self.show_notice(f"Continuing from here: {name}{loading}, {what}{kept}")

    def show_state(self, state, source: str = "Compare", line: str = "") -> None:
        """Show a finished run (not part of the conversation) in the answer and charts,
        read-only, under `line` (where it came from)."""
        self.model.view(state, source, line or f"A run from {source}, shown read-only")

    def open_compare(self):
        return self.windows.open_compare()

    def open_inside(self, step: int | None = None):
        return self.windows.open_inside(step)

    def open_lab(self):
        return self.windows.open_lab()

    def show_notice(self, message: str) -> None:
        self.statusBar().showMessage(message, 8000)

    def stop(self) -> None:
        if self.bridge.busy:
            self.bridge.cancel()

    def select_step(self, step: int | None) -> None:
        self.model.select(step)

    def _progress_idle(self) -> None:
        progress_idle(self.progress)

    def show_error(self, message: str, links: bool = False) -> None:
        self.banner.setTextFormat(Qt.RichText if links else Qt.PlainText)
        self.banner.setText(message)
        self.banner.show()

    def hide_error(self) -> None:
        self.banner.hide()
        self.banner.clear()

    def _show_ab(self, text: str | None) -> None:
        self.ab_label.setText(text or "")
        self.ab_label.setVisible(bool(text))

    # -- session events ----------------------------------------------------------------
    def _on_conversation(self) -> None:
        conv, shown = self.session.conversation, self.session.shown_turn
        self.transcript.show_conversation(conv, shown)
        self.turn_label.show_turn(conv, shown)
        idle, turns = not self._busy, len(conv)
        own = self.session.guest is None  # a guest's turns are not the person's to rerun
        self.regen_button.setEnabled(turns > 0 and idle and own)
        self.ab_button.setEnabled(turns > 0 and idle and own and not self.state.remote)
        self.prompt_panel.timer.start()  # the count beside the prompt includes the conversation

    # -- engine events ---------------------------------------------------------------
    def _on_busy(self, busy: bool) -> None:
        self._busy = busy
        self.run_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.picker.setEnabled(not busy)
        if not busy:
            self._progress_idle()
            self.flow.on_run_ended()
            self.branch_flow.on_run_ended()
            self.right_size_flow.on_run_ended()

    def _on_progress(self, message: str, fraction: float) -> None:
        show_progress(self.progress, message, fraction)
        self.status_label.setText(message)

    def _on_model_loaded(self, record) -> None:
        if self.right_size_flow.takes_model(record):  # the escalation's own, not the loaded
            self.run_view.refresh_status()
            return
        if not self.model.set_model(record):  # every run re-announces its model
            return
        gc.freeze()  # what exists now lives forever: keep it out of GC pauses mid-stream
        self.picker.show_model(record)
        self._progress_idle()
        self.prompt_panel.load_tokenizer(record)
        self.run_view.refresh_status()

    def _on_prefill(self, record) -> None:
        self.model.set_prefill(record)
        show_prefill(self.progress, record)

    def _on_finished(self, record) -> None:
        self.model.finish(record)
        if record.seed is not None and not self.controls.seed_lock.isChecked():
            self.controls.seed.blockSignals(True)
            self.controls.seed.setValue(record.seed)
            self.controls.seed.blockSignals(False)

    def _on_failed(self, record) -> None:
        self.model.finish(record)
        self.show_error(error_text(record))
        if record.kind == "model":  # the box shows the model runs will use, not the bad file
            self.picker.refresh(select=self.model_record.path if self.model_record else None)
        self._progress_idle()

    def _save(self, model_path: str | None = None) -> None:
        """Remember the person's settings, prompt and model (never the tour's: while it
        is open, what it set aside is what is theirs); `model_path` in place of the
        loaded model's."""
        if self.tour.guest.active:
            return
        path = model_path or (self.model_record.path if self.model_record else None)
        window_state.save(
            self.store,
            self.prompt,
            self.controls,
            path,
            self,
            self.split,
            self.side_tabs.isVisible(),
        )

    def closeEvent(self, event) -> None:
        mine = self.tour.guest.model_path  # the person's model, when the tour switched it
        self.tour.guest.leave(load_model=False)
        self._save(mine)
        self.cleanup()
        super().closeEvent(event)

    def cleanup(self) -> None:
        self.run_view.cleanup()
        self.prompt_panel.timer.stop()
        self.bridge.cleanup()
        self.windows.cleanup()
        self.session.close_journal()
