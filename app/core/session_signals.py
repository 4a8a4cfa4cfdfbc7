"""SessionSignals: the one Qt adapter of the Session model.

The Qt-free Session (app/session/) owns what the app shows and announces every
change itself (app/session/events.py); this adapter forwards each announcement
as a Qt signal, so widgets connect the Qt way and slots run on the GUI thread.
Its methods are the session's own, for callers that hold the adapter.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.session import Session
from app.session.run_state import RunState
from app.session.session import EVENTS


class SessionSignals(QObject):
    model_changed = Signal(object)  # ModelRecord of a newly loaded model
    shown_changed = Signal(object)  # RunState now on screen: every readout resets
    conversation_changed = Signal()  # turns, siblings or the turn shown changed
    step_selected = Signal(object)  # the selected step (int) or None (follow the latest)
    tokens_added = Signal(object)  # a batch of the streaming run's token records
    prefill_changed = Signal(object)  # prefill progress of the run on screen
    run_finished = Signal(object)  # the run on screen ended: its DoneRecord or ErrorRecord
    journal_changed = Signal(object)  # the session's Journal, or None once closed

    def __init__(self, session: Session | None = None, parent=None):
        super().__init__(parent)
        self.session = session or Session()
        for name in EVENTS:
            getattr(self.session.events, name).connect(getattr(self, name).emit)

    # -- the session's methods, for callers that hold the adapter ---------------------------
    def show(self, state: RunState, turn: int | None = None, viewing=None) -> None:
        self.session.show(state, turn, viewing)

    def select(self, step: int | None) -> None:
        self.session.select(step)

    def set_model(self, record) -> bool:
        return self.session.set_model(record)

    def set_prefill(self, record) -> None:
        self.session.set_prefill(record)

    def add_tokens(self, records) -> None:
        self.session.add_tokens(records)

    def finish(self, record) -> None:
        self.session.finish(record)

    def new_conversation(self) -> None:
        self.session.new_conversation()

    def begin(self, text: str, turn: int, state: RunState):
        return self.session.begin(text, turn, state)

    def run_ended(self) -> str | None:
        return self.session.run_ended()

    def begin_branch(self, parent, step: int, kind: str, state: RunState):
        return self.session.begin_branch(parent, step, kind, state)

    def show_answer(self, answer) -> RunState | None:
        return self.session.show_answer(answer)

    def delete_branch(self, answer) -> bool:
        """False if `answer` is its turn's only run (nothing is deleted)."""
        return self.session.delete_branch(answer) is not None

    def show_turn(self, turn: int) -> RunState | None:
        return self.session.show_turn(turn)

    def switch_sibling(self, turn: int, sibling: int) -> RunState | None:
        return self.session.switch_sibling(turn, sibling)

    def restore_raw(self, run, state: RunState, same_session_runs, state_of, line="") -> None:
        self.session.restore_raw(run, state, same_session_runs, state_of, line)

    def restore(self, run, state: RunState, same_session_runs, state_of, line="") -> None:
        self.session.restore(run, state, same_session_runs, state_of, line)

    def view(self, state: RunState, source: str, line: str, **guest) -> None:
        self.session.view(state, source, line, **guest)

    def leave_guest(self) -> bool:
        return self.session.leave_guest()

    def adopt(self) -> RunState | None:
        return self.session.adopt()

    def clear_conversation(self) -> None:
        self.session.clear_conversation()
