"""SessionSignals: the one Qt adapter of the Session model.

Every change to what the playground shows goes through these methods, which
change the Qt-free Session and emit what changed; every view (token view,
charts, status line, transcript, History, Inside, Compare) subscribes to the
signals and draws from the session, never from another view or the window.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.session import Session
from app.session.run_state import RunState


class SessionSignals(QObject):
    shown_changed = Signal(object)  # RunState now on screen: every readout resets
    step_selected = Signal(object)  # the selected step (int) or None (follow the latest)
    model_changed = Signal(object)  # ModelRecord of a newly loaded model
    conversation_changed = Signal()  # turns, siblings or the turn shown changed
    run_finished = Signal(object)  # the run on screen ended: its DoneRecord or ErrorRecord

    def __init__(self, session: Session | None = None, parent=None):
        super().__init__(parent)
        self.session = session or Session()

    def show(self, state: RunState, turn: int | None = None, viewing=None) -> None:
        self.session.show(state, turn, viewing)
        self.shown_changed.emit(state)
        self.conversation_changed.emit()

    def select(self, step: int | None) -> None:
        self.session.select(step)
        self.step_selected.emit(step)

    def set_model(self, record) -> bool:
        changed = self.session.set_model(record)
        if changed:
            self.model_changed.emit(record)
        return changed

    def finish(self, record) -> None:
        """The run on screen ended with `record` (done or error)."""
        if record.type == "error":
            self.session.shown.error = record
        else:
            self.session.shown.done = record
        self.run_finished.emit(record)

    def new_conversation(self) -> None:
        self.session.new_conversation()
        self.shown_changed.emit(self.session.shown)
        self.conversation_changed.emit()

    def begin(self, text: str, turn: int, state: RunState):
        out = self.session.begin(text, turn, state)
        self.shown_changed.emit(state)
        self.conversation_changed.emit()
        return out

    def run_ended(self) -> str | None:
        shown = self.session.shown
        message = self.session.run_ended()
        if self.session.shown is not shown:  # a failed branch: its parent again
            self.shown_changed.emit(self.session.shown)
        self.conversation_changed.emit()
        return message

    def begin_branch(self, parent, step: int, kind: str, state: RunState):
        """Start `state` as a branch of answer `parent` at `step` (Session.begin_branch)."""
        out = self.session.begin_branch(parent, step, kind, state)
        self.shown_changed.emit(state)
        self.conversation_changed.emit()
        return out

    def show_answer(self, answer) -> RunState | None:
        """Show one run of a turn (a branch or its parent); every view follows."""
        state = self.session.show_answer(answer)
        if state is not None:
            self.shown_changed.emit(state)
        self.conversation_changed.emit()
        return state

    def delete_branch(self, answer) -> bool:
        """Take a run out of its turn (the journal's bin keeps it); False if it is the
        turn's only run."""
        shown = self.session.shown
        if self.session.delete_branch(answer) is None:
            return False
        if self.session.shown is not shown:
            self.shown_changed.emit(self.session.shown)
        self.conversation_changed.emit()
        return True

    def show_turn(self, turn: int) -> RunState | None:
        state = self.session.show_turn(turn)
        if state is not None:
            self.shown_changed.emit(state)
            self.conversation_changed.emit()
        return state

    def switch_sibling(self, turn: int, sibling: int) -> RunState | None:
        state = self.session.switch_sibling(turn, sibling)
        if state is not None:
            self.shown_changed.emit(state)
        self.conversation_changed.emit()
        return state

    def restore_raw(self, run, state: RunState, same_session_runs, state_of) -> None:
        """Reopen a raw-completion run (and its branches) from History."""
        self.session.restore_raw(run, state, same_session_runs, state_of)
        self.shown_changed.emit(state)
        self.conversation_changed.emit()

    def restore(self, run, state: RunState, same_session_runs, state_of) -> None:
        self.session.restore(run, state, same_session_runs, state_of)
        self.shown_changed.emit(state)
        self.conversation_changed.emit()
