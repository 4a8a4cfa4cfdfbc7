"""RightSizeFlow: the playground's "Answer with the right-sized model" (the rules:
app/session/right_size.py).

The window gives it the person's cascade settings (None while the button is off), the
turn flow that starts runs, and what it may ask of the window. A turn the person runs
is watched; when it ends on its own the flow decides, names the run in History, and
below the threshold starts the same turn again on the large model (`runs_on`: the
engine loads it for that run only; the loaded model, the picker and the prompt's token
count stay the small model's). The large model's ModelRecord becomes that run's own
(`takes_model`), never the session's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from app.session.right_size import (
    RightSizing,
    RouteNote,
    decide,
    decided,
    escalated_to,
    judged,
    large_failed,
    large_model_named,
)
from app.session.run_state import RunState
from engine.errors import LogitscopeError


@dataclass
class RightSizeUi:
    """What the flow may ask of the window (plain callables)."""

    sizing: Callable[[], RightSizing | None]  # the person's settings; None: the button is off
    small_spec: Callable[[], str | None]  # the loaded model's spec
    label: Callable[[str], str]  # a model spec's short name ("Gemma 3 270M")
    record_label: Callable[[object], str]  # a loaded model's (a ModelRecord's) short name
    show_error: Callable[[str], None]
    refresh_line: Callable[[], None]  # the line above the answer says the route again


class RightSizeFlow:
    def __init__(self, model, turns, ui: RightSizeUi):
        """`model`: the SessionSignals; `turns`: the TurnFlow (start_turn, checks)."""
        self.model, self.turns, self.ui = model, turns, ui
        self.watched: tuple[RunState, str, int | None, RightSizing] | None = None
        self.escalating: RunState | None = None  # the large attempt in flight
        turns.hook(self.check, self.watch)

    @property
    def session(self):
        return self.model.session

    def check(self, _settings) -> None:
        """Refuse a run whose cascade cannot work (raises SettingsError: one sentence)."""
        sizing = self.ui.sizing()
        if sizing is not None:
            sizing.checked(self.ui.small_spec())

    def watch(self, state: RunState, text: str, turn: int | None) -> None:
        """A turn of the person's started: decide on it once it ends (not during the A/B)."""
        sizing = self.ui.sizing()
        self.watched = None
        if sizing is not None and self.session.ab is None and not state.reading:
            self.watched = (state, text, turn, sizing.checked(self.ui.small_spec()))

    def takes_model(self, record) -> bool:
        """The engine loaded `record` for the large attempt: it is that run's own (True),
        not the playground's loaded model."""
        state = self.escalating
        if state is None or state.done is not None or state.error is not None:
            return False
        state.ran_on(record)
        large_model_named(state, self.ui.record_label(record))
        self.ui.refresh_line()
        return True

    def on_run_ended(self) -> None:
        """A run ended (the bridge is idle): finish an escalation, or decide on a turn."""
        if self.escalating is not None:
            self._escalation_ended(self.escalating)
            return
        watched, self.watched = self.watched, None
        if watched is None:
            return
        state, text, turn, sizing = watched
        if not judged(state):
            return
        small = self.ui.record_label(state.model) if state.model else "the loaded model"
        note = decide(sizing, state, small, self.ui.label(sizing.large))
        decided(state, note)
        self._name(state, note.journal_name(state.run_id))
        self.ui.refresh_line()
        if not note.escalated:
            return
        started = self.turns.start_turn(
            text,
            turn if turn is not None else 0,
            runs_on=sizing.large,
            settings=state.settings,
        )
        if not started:
            large_failed(note, "it could not start")
            self.ui.refresh_line()
            return
        large = self.session.shown
        escalated_to(state, large)
        self.escalating = large
        self.ui.refresh_line()

    def _escalation_ended(self, large: RunState) -> None:
        self.escalating = None
        note: RouteNote = large.route
        small = note.partner
        if large.error is not None or large.done is None or large.done.finish_reason == "cancelled":
            if large.error is not None:
                why = large.error.message
            else:
                why = "stopped before it finished"
            large_failed(small.route, why, note)
            self._show(small)  # the small answer stands: the conversation goes on from it
            self._name(small, small.route.journal_name(small.run_id))
            self.ui.show_error(
                f"{note.large} did not answer ({why}): {note.small}'s answer stands, not escalated."
            )
        self._name(large, note.journal_name(small.run_id))
        self.ui.refresh_line()

    def show_partner(self) -> None:
        """Show the other attempt of the turn on screen (the line's link)."""
        note = self.session.shown.route
        if isinstance(note, RouteNote) and note.partner is not None:
            self._show(note.partner)

    def _place(self, state: RunState):
        """(turn, sibling, Answer) of the attempt `state` in the conversation, or None (a
        raw completion is a single-turn run, outside it)."""
        conversation = self.session.conversation
        for i in range(len(conversation)):
            for j, answer in enumerate(conversation.siblings(i)[0]):
                if answer.state is state:
                    return i, j, answer
        return None

    def _show(self, state: RunState) -> None:
        place = self._place(state)
        if place is None:
            self.model.show(state)
        else:
            self.model.switch_sibling(place[0], place[1])

    def _name(self, state: RunState, name: str) -> None:
        """Name the attempt in the Branches tree and in History (a name is a nicety:
        a history that cannot be written loses it and nothing else)."""
        session = self.session
        place = self._place(state)
        if place is not None:
            session.rename(place[2], name)
        if session.journal is not None and state.run_id:
            with contextlib.suppress(LogitscopeError):
                session.journal.meta(state.run_id, name=name)
