"""TurnFlow: the playground's multi-turn flow on top of the Session model.

Which prompt a run sends, editing, regenerating and showing turns, switching
between a turn's sibling runs, the context-limit choice and the cold-vs-cached
A/B. The rules themselves are the Session's methods (Qt-free, tested without
widgets); this class adds what needs the widgets it is given in `__init__` (the
prompt box, the sampling controls, the banner through `ui`). It never reads a
window's attributes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from app.core.session_signals import SessionSignals
from app.playground.read_flow import start_read
from app.session.run_state import RunState
from engine.errors import SettingsError
from engine.run.settings import SamplingSettings


@dataclass
class FlowUi:
    """What the flow may ask of the window (plain callables)."""

    show_error: Callable[..., None]  # (message, links=False)
    hide_error: Callable[[], None]
    show_notice: Callable[[str], None]
    start_run: Callable[[RunState, object, dict | None], None]  # (state, prompt, journal info)
    show_ab: Callable[[str | None], None]  # the A/B line's text (None hides it)
    drop_oldest: Callable[[], bool]  # drop turns without asking when the context is full


class TurnFlow:
    def __init__(self, model: SessionSignals, bridge, controls, prompt_panel, ui: FlowUi):
        self.model, self.bridge, self.controls = model, bridge, controls
        self.panel, self.prompt, self.ui = prompt_panel, prompt_panel.prompt, ui
        self.pending_turn: tuple | None = None  # waiting for the context choice
        # checks(settings) before a turn runs (raises SettingsError: nothing is sent), and
        # on_started(state, text, turn) once it runs: the right-sized model's (the window's)
        self.checks: Callable[[SamplingSettings], None] = lambda settings: None
        self.on_started: Callable[[RunState, str, int | None], None] | None = None

    @property
    def session(self):
        return self.model.session

    def hook(self, checks, on_started) -> None:
        """`checks(settings)` before a turn runs (raises SettingsError: nothing is sent)
        and `on_started(state, text, turn)` once it runs (the right-sized model's)."""
        self.checks, self.on_started = checks, on_started

    # -- what Run sends -----------------------------------------------------------------
    def next_prompt(self, text: str) -> tuple[int, object]:
        """(turn number, what Run would send) for the prompt box's `text`."""
        return self.panel.next_prompt(text)

    def context_overflow(self, prompt, settings: SamplingSettings) -> tuple[int, int] | None:
        """(tokens needed, context) when the prompt and its answer would not fit, else
        None. Needs the prompt panel's tokenizer: a server counts its own tokens."""
        model = self.session.model
        ctx = (model.context_length or 0) if model else 0
        counted = self.panel.count(prompt)
        if not ctx or counted is None:
            return None
        need = counted[0] + settings.max_tokens
        return (need, ctx) if need > ctx else None

    def run_box(self, cold: bool = False) -> None:
        """Send the prompt box as the next turn (or in place of the turn being edited);
        the last turn's own message (still in the box) or an empty box runs it again."""
        if self.bridge.busy:
            return
        self.model.leave_guest()  # a run always continues the person's own conversation
        text = self.prompt.toPlainText()
        if self.controls.reading():  # Mode: Read a text (app/playground/read_flow.py)
            start_read(self, text)
            return
        turn = self.session.next_turn(text)
        if turn < len(self.session.conversation) and self.session.editing_turn is None:
            self.regenerate(cold=cold)
            return
        self.start_turn(text, turn, cold, from_box=True)

    def start_turn(
        self,
        text: str,
        turn: int,
        cold: bool = False,
        drop: bool = False,
        from_box: bool = False,
        runs_on: str | None = None,
        settings: SamplingSettings | None = None,
    ) -> bool:
        """Run `text` as turn `turn` (a new sibling run there; History keeps the others).
        `runs_on`: a model other than the loaded one, with `settings` (the right-sized
        escalation: the small attempt's settings, the context check left to the engine)."""
        if self.bridge.busy:
            return False
        try:
            if not text.strip():
                raise SettingsError("The prompt is empty: type something for the model first.")
            if settings is None:
                settings = self.controls.settings().with_(prompt_cache=not cold)
            settings = settings.validate()
            if runs_on is None:
                self.checks(settings)
        except SettingsError as e:
            self.ui.show_error(str(e))
            return False
        chat, conv = settings.chat_template, self.session.conversation
        turn = min(turn, len(conv)) if chat else 0
        over = (
            runs_on is None
            and chat
            and turn
            and self.context_overflow(conv.prompt(text, turn), settings)
        )
        if over:
            if not (drop or self.ui.drop_oldest()):
                self.ask_about_context(*over, (text, turn, cold, from_box))
                return False
            gone = self.session.fit_by_dropping(
                text, turn, lambda p: self.context_overflow(p, settings) is not None
            )
            turn -= gone
            self.ui.show_notice(
                f"Dropped the {gone} oldest turn{'s' * (gone != 1)} to fit "
                "the context window (History keeps them)"
            )
        self.ui.hide_error()
        estimate = None if runs_on else self.panel.count(conv.prompt(text, turn) if chat else text)
        state = RunState(
            prompt=text,
            settings=settings,
            model=None if runs_on else self.session.model,
            estimated_prompt=estimate,
            runs_on=runs_on,
        )
        prompt, info = self.model.begin(text, turn, state)
        if from_box and chat:  # typing replaces it; Run again runs this turn again
            self.prompt.selectAll()
        if self.on_started is not None and runs_on is None:
            self.on_started(state, text, self.session.shown_turn)
        self.ui.start_run(state, prompt, info)
        return True

    def ask_about_context(self, need: int, ctx: int, pending: tuple) -> None:
        """The banner states the overflow and offers the two ways on (never truncates)."""
        self.pending_turn = pending
        drop = "<a href='drop'>drop the oldest turns and run</a>" if pending[1] else ""
        self.ui.show_error(
            f"This conversation and its answer need {need:,} tokens, but the model's context "
            f"window is {ctx:,}. Nothing was sent. {drop}{' · ' if drop else ''}"
            "<a href='new'>start a new conversation</a> · or lower Max tokens "
            "(View ▸ Settings and history panel). Turn on Run ▸ Drop oldest turns when the "
            "context is full to always drop them.",
            links=True,
        )

    def on_banner_link(self, link: str, new_conversation: Callable[[], None]) -> None:
        pending, self.pending_turn = self.pending_turn, None
        self.ui.hide_error()
        if link == "new":
            new_conversation()
            self.prompt.setPlainText(pending[0] if pending else "")
        elif link == "drop" and pending is not None:
            text, turn, cold, from_box = pending
            self.start_turn(text, turn, cold, drop=True, from_box=from_box)

    # -- turns ----------------------------------------------------------------------------
    def _refuse_guest(self, what: str) -> bool:
        """True (after saying why) when the run on screen is shown from elsewhere:
        only Continue from here makes its conversation one to change."""
        guest = self.session.guest
        if guest is None:
            return False
        self.ui.show_error(
            f"This conversation is shown from {guest.source}, read-only: choose Continue "
            f"from here (above the answer) to {what} it, or Run to go on with your own."
        )
        return True

    def regenerate(self, turn: int | None = None, cold: bool = False) -> bool:
        """Run a turn's message again with the current settings (the last by default)."""
        if self._refuse_guest("regenerate a turn of"):
            return False
        turns = self.session.conversation.turns
        if not turns:
            self.ui.show_error("There is no turn to regenerate yet: type a message and run it.")
            return False
        if self.bridge.busy:
            return False
        turn = len(turns) - 1 if turn is None else turn
        return self.start_turn(turns[turn].user, turn, cold)

    def edit(self, turn: int) -> None:
        """Put a turn's message back in the prompt box; running it adds a sibling run of
        that turn (the earlier run and what followed it stay in the tree and History)."""
        session = self.session
        turns = session.conversation.turns
        if self.bridge.busy or not 0 <= turn < len(turns) or self._refuse_guest("edit"):
            return
        self.prompt.setPlainText(turns[turn].user)
        session.edit_turn(turn)
        self.prompt.setFocus()
        self.ui.show_notice(
            f"Editing turn {session.conversation.dropped + turn + 1}: "
            "Ctrl+Enter runs it in place of that turn and the ones after it "
            "(History keeps them)"
        )

    def show_turn(self, turn: int) -> None:
        """Show an earlier turn's answer and charts (a reopened turn without its run cannot)."""
        if self.bridge.busy:
            return
        if self.model.show_turn(turn) is None:
            self.ui.show_notice(
                "This turn's run is not in the history any more: only its text is known"
            )

    def switch_sibling(self, turn: int, step: int) -> None:
        """Show the previous (-1) or next (+1) run of turn `turn`."""
        if self.bridge.busy:
            return
        answers, current = self.session.conversation.siblings(turn)
        target = current + step
        if 0 <= target < len(answers):
            self.model.switch_sibling(turn, target)

    def on_link(self, kind: str, turn: int) -> None:
        actions = {
            "show": self.show_turn,
            "edit": self.edit,
            "regen": self.regenerate,
            "prev": lambda t: self.switch_sibling(t, -1),
            "next": lambda t: self.switch_sibling(t, +1),
        }
        actions[kind](turn)

    def reopen(self, run, sessions) -> None:
        """Show a past run (a RunLog) again, without the model, as a guest (app/session/
        guest.py): a chat run with its conversation, any run with its branches (from
        `sessions`, History's), read-only; the next Run continues the person's own."""
        if self.bridge.busy:
            self.ui.show_error("Stop the current run before opening one from history.")
            return
        state = state_of(run)
        self.ui.hide_error()
        same = [s for s in sessions if s.session_id == run.session_id]
        chat = state.settings.chat_template and not state.reading  # a read is never a turn
        restore = self.model.restore if chat else self.model.restore_raw
        restore(run, state, same[0].runs if same else (), state_of, history_line(run, state))
        if run.error:
            self.ui.show_error(f"This run ended with an error: {run.error.message}")

    def back_to_own(self) -> None:
        """Back to your conversation: the guest leaves the screen, nothing runs."""
        if not self.bridge.busy:
            self.model.leave_guest()

    def continue_here(self) -> RunState | None:
        """Continue from here: the guest's conversation becomes the person's own; returns
        the run whose settings and model the window then takes (None: nothing shown
        from elsewhere, or a run is going)."""
        if self.bridge.busy:
            return None
        return self.model.adopt()

    def on_run_ended(self) -> None:
        """A run that failed before its first token takes its turn back; its message
        returns to the prompt box when that is empty (nothing typed is lost)."""
        message = self.model.run_ended()
        if message is not None and not self.prompt.toPlainText().strip():
            self.prompt.setPlainText(message)
        self.ab_step()

    # -- cold vs cached A/B ---------------------------------------------------------------
    def start_ab(self) -> None:
        """Rerun the last turn without the prompt cache, then with it; show both TTFTs."""
        if self.bridge.busy:
            return
        turn = self.session.start_ab()
        if turn is None:
            return
        self.ui.show_ab("A/B: running the turn cold (whole prompt prefilled)…")
        if not self.regenerate(turn, cold=True):
            self.session.stop_ab()

    def ab_step(self) -> None:
        step = self.session.ab_next()
        if step == "stopped":
            self.ui.show_ab("A/B stopped: the run did not finish")
        elif step == "cached":
            self.ui.show_ab("A/B: running the same turn again from the cache…")
            if not self.regenerate(self.session.ab.turn, cold=False):
                self.session.stop_ab()
        elif step == "result":
            self.ui.show_ab(ab_text(*self.session.ab_result))


def ab_text(cold, cached) -> str:
    ratio = cold.ttft_s / cached.ttft_s if cold.ttft_s and cached.ttft_s else None
    times = f" · cached is {ratio:.1f}× faster to the first token" if ratio else ""
    return (
        f"<b>Cold vs cached</b> · cold TTFT {cold.ttft_s or 0:.2f} s ({cold.prompt_tokens} "
        f"tokens prefilled) · cached TTFT {cached.ttft_s or 0:.2f} s ({cached.cached_tokens} "
        f"of {cached.prompt_tokens} tokens from cache){times}"
    )


def history_line(run, state: RunState) -> str:
    """The line above a run reopened from History: what it was, when, on which model."""
    what = "A read" if state.reading else "A run"
    model = state.model.name if state.model is not None else "an unknown model"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.started)) if run.started else ""
    title = " ".join(run.title.split())
    return f"{what} from History ({when}, {model}): “{title}”, shown read-only"


def state_of(run) -> RunState:
    """A RunState of a journaled run (RunLog), for showing it again."""
    return RunState.from_run(run)
