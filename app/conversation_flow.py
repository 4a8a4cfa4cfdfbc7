"""The playground's multi-turn flow: which prompt a run sends, editing and
regenerating turns, reopening a conversation from History, the context-limit
choice and the cold-vs-cached A/B. Functions of the PlaygroundWindow (`win`),
kept here so the window's own file stays about layout and engine events."""

from __future__ import annotations

from app.conversation import Conversation, Turn
from app.run_state import RunState
from engine.errors import SettingsError
from engine.sessions.session_log import RunLog
from engine.settings import SamplingSettings


def refresh(win) -> None:
    """Redraw the transcript and the turn line for the turn the answer view shows."""
    conv, shown = win.conversation, win.shown_turn
    win.transcript.show_conversation(conv, shown)
    win.turn_label.show_turn(conv, shown)
    last = len(conv.turns) - 1
    win.regen_button.setEnabled(last >= 0 and not win.bridge.busy)
    win.ab_button.setEnabled(last >= 0 and not win.bridge.busy and not win.state.remote)
    win.prompt_panel.timer.start()  # the count beside the prompt includes the conversation


def new_conversation(win) -> None:
    win.conversation = Conversation()
    win.shown_turn = None
    win.ab = None
    refresh(win)


def next_turn(win, text: str) -> int:
    """The turn index Run would give `text`: the turn being edited, the last turn again
    (its own message, or an empty box), or a new turn."""
    conv = win.conversation
    if win.editing_turn is not None:
        return min(win.editing_turn, len(conv.turns))
    if conv.turns and text in ("", conv.turns[-1].user):
        return len(conv.turns) - 1
    return len(conv.turns)


def next_prompt(win, text: str) -> tuple[int, object]:
    """(turn number, what Run would send) for the prompt box's `text`."""
    turn = next_turn(win, text)
    if win.controls.mode.currentIndex() != 0:
        return 1, text
    return win.conversation.dropped + turn + 1, win.conversation.prompt(text, turn)


def context_overflow(win, prompt, settings: SamplingSettings) -> tuple[int, int] | None:
    """(tokens needed, context) when the prompt and its answer would not fit, else None.
    Needs the window's tokenizer: a server counts its own tokens and says so."""
    ctx = (win.model_record.context_length or 0) if win.model_record else 0
    counted = win.prompt_panel.count(prompt)
    if not ctx or counted is None:
        return None
    need = counted[0] + settings.max_tokens
    return (need, ctx) if need > ctx else None


def fit_by_dropping(win, text: str, upto: int, settings: SamplingSettings) -> int:
    """Drop the oldest turns until `text` after turns[:upto] fits; returns how many."""
    conv, dropped = win.conversation, 0
    while upto > 0 and context_overflow(win, conv.prompt(text, upto), settings):
        conv.drop_oldest()
        upto -= 1
        dropped += 1
    return dropped


def ask_about_context(win, need: int, ctx: int, pending: tuple) -> None:
    """The banner states the overflow and offers the two ways on (never truncates);
    `pending` is start_turn's (text, turn, cold, from_box), run if the user drops turns."""
    win.pending_turn = pending
    turn = pending[1]
    drop = "<a href='drop'>drop the oldest turns and run</a>" if turn else ""
    win.show_error(
        f"This conversation and its answer need {need:,} tokens, but the model's context "
        f"window is {ctx:,}. Nothing was sent. {drop}{' · ' if drop else ''}"
        "<a href='new'>start a new conversation</a> · or lower Max tokens "
        "(View ▸ Settings). Turn on Run ▸ Drop oldest turns when the context is full to "
        "always drop them.",
        links=True,
    )


def on_banner_link(win, link: str) -> None:
    pending, win.pending_turn = getattr(win, "pending_turn", None), None
    win.hide_error()
    if link == "new":
        text = pending[0] if pending else ""
        win.new_conversation()
        win.prompt.setPlainText(text)
    elif link == "drop" and pending is not None:
        text, turn, cold, from_box = pending
        start_turn(win, text, turn, cold, drop=True, from_box=from_box)


def start_turn(win, text: str, turn: int, cold: bool = False, drop: bool = False,
               from_box: bool = False) -> bool:  # fmt: skip
    """Run `text` as turn `turn` (turns from there on are replaced; History keeps them)."""
    if win.bridge.busy:
        return False
    try:
        if not text.strip():
            raise SettingsError("The prompt is empty: type something for the model first.")
        settings = win.controls.settings().with_(prompt_cache=not cold).validate()
    except SettingsError as e:
        win.show_error(str(e))
        return False
    conv = win.conversation
    chat = settings.chat_template
    if not chat:  # raw completion is one text, not a conversation
        if conv.turns:
            new_conversation(win)
        conv, turn = win.conversation, 0
    turn = min(turn, len(conv.turns))
    over = context_overflow(win, conv.prompt(text, turn), settings) if chat and turn else None
    if over:
        if drop or win.actions_["drop_oldest"].isChecked():
            gone = fit_by_dropping(win, text, turn, settings)
            turn -= gone
            win.show_notice(f"Dropped the {gone} oldest turn{'s' * (gone != 1)} to fit the "
                            "context window (History keeps them)")  # fmt: skip
        else:
            ask_about_context(win, *over, (text, turn, cold, from_box))
            return False
    prompt = conv.prompt(text, turn) if chat else text
    win.hide_error()
    del conv.turns[turn:]
    state = RunState(prompt=text, settings=settings, model=win.model_record,
                     estimated_prompt=win.prompt_panel.count(prompt))  # fmt: skip
    state.earlier = conv.earlier_spans()
    state.kv_growth = conv.kv_growth()
    state.sent = prompt
    if chat:
        conv.turns.append(Turn(text, state))
    if from_box and chat:  # typing replaces it; Run again runs this turn again
        win.prompt.selectAll()
    win.begin_run(state, prompt, conv.journal_info(turn) if chat else None)
    win.shown_turn = turn if chat else None
    refresh(win)
    return True


def regenerate(win, turn: int | None = None, cold: bool = False) -> bool:
    """Run a turn's message again with the current settings (the last turn by default)."""
    conv = win.conversation
    if not conv.turns or win.bridge.busy:
        if not conv.turns:
            win.show_error("There is no turn to regenerate yet: type a message and run it.")
        return False
    turn = len(conv.turns) - 1 if turn is None else turn
    return start_turn(win, conv.turns[turn].user, turn, cold)


def edit(win, turn: int) -> None:
    """Put a turn's message back in the prompt box; running it replaces that turn and
    the ones after it (they stay in History)."""
    conv = win.conversation
    if win.bridge.busy or not 0 <= turn < len(conv.turns):
        return
    win.prompt.setPlainText(conv.turns[turn].user)
    win.editing_turn = turn
    win.prompt.setFocus()
    win.show_notice(f"Editing turn {conv.dropped + turn + 1}: Ctrl+Enter runs it in place of "
                    "that turn and the ones after it (History keeps them)")  # fmt: skip


def show_turn(win, turn: int) -> None:
    """Show an earlier turn's answer and charts (a reopened turn without its run cannot)."""
    conv = win.conversation
    if win.bridge.busy or not 0 <= turn < len(conv.turns):
        return
    state = conv.turns[turn].state
    if state is None:
        win.show_notice("This turn's run is not in the history any more: only its text is known")
        return
    win.show_state(state)
    win.shown_turn = turn
    refresh(win)


def on_link(win, kind: str, turn: int) -> None:
    {"show": show_turn, "edit": edit, "regen": regenerate}[kind](win, turn)


def on_run_ended(win) -> None:
    """A run that failed before its first token takes its turn back, and its message
    returns to the prompt box when that is empty (nothing typed is lost)."""
    conv, state = win.conversation, win.state
    failed = state.error is not None or (
        state.done is not None and state.done.finish_reason == "cancelled"
    )
    if failed and not state.tokens and conv.turns and conv.turns[-1].state is state:
        turn = conv.turns.pop()
        if not win.prompt.toPlainText().strip():
            win.prompt.setPlainText(turn.user)
        win.shown_turn = None
    refresh(win)
    ab_step(win)


def restore(win, run: RunLog, state: RunState) -> None:
    """Reopen a run from History as the conversation it ended (continue it by typing)."""
    info = run.conversation or {}
    messages = run.messages
    users = sum(m["role"] == "user" for m in messages)
    conv = Conversation.from_messages(info.get("conversation_id"), messages,
                                      int(info.get("turn", users)) - users)  # fmt: skip
    session = next((s for s in win.history.sessions if s.session_id == run.session_id), None)
    if session is not None and info:
        for other in session.runs:  # earlier turns' own runs: their charts come back too
            c = other.conversation or {}
            j = int(c.get("turn", -1)) - conv.dropped
            same = c.get("conversation_id") == conv.conversation_id and 0 <= j < len(conv.turns)
            if same and conv.turns[j].user == other.prompt and other.done is not None:
                conv.turns[j].state = state_of(other)
    conv.turns.append(Turn(run.prompt, state))
    win.conversation = conv
    win.shown_turn = len(conv.turns) - 1
    state.earlier = conv.earlier_spans(win.shown_turn)
    state.kv_growth = conv.kv_growth()
    refresh(win)


def state_of(run: RunLog) -> RunState:
    state = RunState(prompt=run.prompt, settings=SamplingSettings.from_dict(run.settings),
                     model=run.model_record)  # fmt: skip
    state.add_tokens(run.tokens)
    state.done, state.error, state.prefill = run.done, run.error, run.last_prefill
    state.run_id = run.run_id
    if run.messages:
        state.sent = [*run.messages, {"role": "user", "content": run.prompt}]
    return state


# -- cold vs cached A/B -------------------------------------------------------------------
def start_ab(win) -> None:
    """Rerun the last turn without the prompt cache, then with it, and show both TTFTs."""
    if win.bridge.busy or not win.conversation.turns:
        return
    win.ab = {"turn": len(win.conversation.turns) - 1, "cold": None, "cached": None}
    win.ab_label.setText("A/B: running the turn cold (whole prompt prefilled)…")
    win.ab_label.show()
    regenerate(win, win.ab["turn"], cold=True)


def ab_step(win) -> None:
    ab = getattr(win, "ab", None)
    if not ab:
        return
    done = win.state.done
    if done is None or win.state.error is not None:
        win.ab = None
        win.ab_label.setText("A/B stopped: the run did not finish")
        return
    if ab["cold"] is None:
        ab["cold"] = done
        win.ab_label.setText("A/B: running the same turn again from the cache…")
        if not regenerate(win, ab["turn"], cold=False):
            win.ab = None
        return
    ab["cached"] = done
    win.ab_result = (ab["cold"], ab["cached"])
    win.ab = None
    win.ab_label.setText(ab_text(*win.ab_result))


def ab_text(cold, cached) -> str:
    ratio = cold.ttft_s / cached.ttft_s if cold.ttft_s and cached.ttft_s else None
    times = f" · cached is {ratio:.1f}× faster to the first token" if ratio else ""
    return (f"<b>Cold vs cached</b> · cold TTFT {cold.ttft_s or 0:.2f} s ({cold.prompt_tokens} "
            f"tokens prefilled) · cached TTFT {cached.ttft_s or 0:.2f} s ({cached.cached_tokens} "
            f"of {cached.prompt_tokens} tokens from cache){times}")  # fmt: skip
