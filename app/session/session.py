"""Session: the playground's whole state, without Qt, and the rules that change it.

What it holds: the conversation tree, the run on screen (`shown`, with its selected
step), which turn that is, a turn being edited, a run shown from elsewhere (a guest:
app/session/guest.py says the rule, "what is shown from elsewhere never becomes
yours") with the person's own workspace behind it, the loaded model, the
cold-vs-cached A/B in progress and its result, the journal handle, History's view of
the journal (app/session/history.py) and Compare's lanes (app/session/comparison.py).
Every view draws from it (through the Qt adapter in app/core/session_signals.py); its
rules are plain methods, tested without widgets (tests/session/).
"""

from __future__ import annotations

from collections.abc import Callable

from app.session.batches import ABTest, SampleBatch
from app.session.comparison import Comparison
from app.session.conversation import Answer, Conversation, Turn
from app.session.events import Announcer, announces
from app.session.families import add_family, family  # noqa: F401 - family: for callers
from app.session.guest import FROM_HISTORY, Guest, SetAside, Workspace
from app.session.history import History
from app.session.run_state import RunState

# What the session announces (app/core/session_signals.py forwards each as a Qt signal).
EVENTS = (
    "model_changed",  # (ModelRecord) another model, or other load options, was loaded
    "shown_changed",  # (RunState) another run is on screen: every readout resets
    "conversation_changed",  # () turns, siblings, branches or the turn shown changed
    "step_selected",  # (int | None) the selected step; None follows the latest token
    "tokens_added",  # (records) tokens of the streaming run on screen arrived
    "prefill_changed",  # (PrefillRecord) prefill progress of the run on screen
    "run_finished",  # (DoneRecord | ErrorRecord) the run on screen ended
    "journal_changed",  # (Journal | None) the session's journal was opened or closed
)


class Session:
    """The state every playground view shows (see the module's docstring)."""

    def __init__(self):
        self.conversation = Conversation()
        self.shown = RunState()  # the run on screen
        self.shown_turn: int | None = None  # its turn in the conversation, if it has one
        self.editing_turn: int | None = None  # a turn put back in the prompt box
        self.viewing = None  # a past run (RunLog) reopened from History
        self.guest: Guest | None = None  # a run shown from elsewhere, with yours behind it
        self.journal_title: str | None = None  # the next journal's session title ("Tour")
        self.model = None  # the loaded model's ModelRecord
        self.ab: ABTest | None = None
        self.ab_result: tuple | None = None  # (cold DoneRecord, cached DoneRecord)
        self.journal = None  # this session's Journal, created at the first run
        self._running: Answer | None = None  # the answer whose run is streaming
        self.raw_turn: Turn | None = None  # the last raw-completion run and its branches
        self.sampling: SampleBatch | None = None  # Sample N in progress
        self.history = History()  # History's view of the journal (its own announcements)
        self.comparison = Comparison()  # Compare's lanes (its own announcements)
        self.events = Announcer(EVENTS)

    # -- the run on screen ----------------------------------------------------------------
    @announces
    def show(self, state: RunState, turn: int | None = None, viewing=None) -> None:
        """Put `state` on screen (a new run, an earlier turn, a reopened run)."""
        self.shown, self.shown_turn, self.viewing = state, turn, viewing
        self.events.note("shown_changed", state)
        self.events.note("conversation_changed")

    @announces
    def select(self, step: int | None) -> None:
        """Select a step of the run on screen (None: follow the latest token); every
        view of that run follows, wherever the step was chosen."""
        self.shown.selected = step
        self.events.note("step_selected", step)

    # -- the streaming run on screen ------------------------------------------------------
    @announces
    def set_prefill(self, record) -> None:
        """Prefill progress of the run on screen."""
        self.shown.prefill = record
        self.events.note("prefill_changed", record)

    @announces
    def add_tokens(self, records: list) -> None:
        """Tokens of the run on screen arrived (the engine's batch, in order)."""
        self.shown.add_tokens(records)
        self.events.note("tokens_added", records)

    @announces
    def finish(self, record) -> None:
        """The run on screen ended with `record` (a DoneRecord or an ErrorRecord)."""
        self.shown.end(record)
        self.events.note("run_finished", record)

    @staticmethod
    def name_run(state: RunState, run_id: str | None) -> None:
        """The journal gave `state` its run id (None: the history could not be written)."""
        state.name(run_id)

    # -- the journal ----------------------------------------------------------------------
    @announces
    def open_journal(self, create: Callable[[], object]):
        """This session's journal, made by `create()` at the first run (its errors
        propagate: the caller says what went wrong)."""
        if self.journal is None:
            self.journal = create()
            self.events.note("journal_changed", self.journal)
        return self.journal

    @announces
    def close_journal(self) -> None:
        """Close this session's journal (a new conversation starts a new session)."""
        if self.journal is not None:
            self.journal.close()
            self.journal = None
            self.events.note("journal_changed", None)

    # -- Sample N, the A/B and the turn being edited ------------------------------------------
    @announces
    def rename(self, answer: Answer, name: str) -> None:
        """Name a run of a turn (the tree shows it; History saves it)."""
        answer.name = name.strip()
        self.events.note("conversation_changed")

    def start_sampling(self, batch: SampleBatch) -> None:
        self.sampling = batch

    def end_sampling(self) -> None:
        self.sampling = None

    def next_sample_seed(self) -> int | None:
        """The seed of Sample N's next future, taken off its list (None: all ran, and
        the batch ends)."""
        batch = self.sampling
        if batch is None or not batch.seeds:
            self.sampling = None
            return None
        return batch.seeds.pop(0)

    def edit_turn(self, turn: int | None) -> None:
        """Put turn `turn`'s message back in the prompt box for editing (None: none)."""
        self.editing_turn = turn

    def stop_ab(self) -> None:
        """Give up the cold-vs-cached A/B in progress."""
        self.ab = None

    @property
    def shown_model(self):
        """The model of the run on screen (its own, not the one loaded now)."""
        return self.shown.model if self.shown.model is not None else self.model

    @announces
    def set_model(self, record) -> bool:
        """The engine loaded `record`; True if it differs from the model loaded before:
        another model, or the same one loaded with other options (a context length or KV
        precision chosen at load: every view's context is the loaded record's). A run
        being prepared or streaming takes it as its own; a finished or reopened one keeps
        the model it ran with."""
        changed = _load_key(self.model) != _load_key(record)  # each run re-announces it
        self.model = record
        if self.shown.done is None and self.shown.error is None and self.guest is None:
            self.shown.model = record
        if changed:
            self.events.note("model_changed", record)
        return changed

    # -- conversation rules -----------------------------------------------------------------
    @announces
    def new_conversation(self) -> None:
        self.close_journal()  # the next run starts a new session in the history
        self.clear_conversation()

    @announces
    def clear_conversation(self) -> None:
        """An empty playground in the same History session (the tour's next lesson);
        a guest on screen and the workspace behind it are both let go."""
        self.conversation = Conversation()
        self.shown_turn = self.editing_turn = self.viewing = self.guest = None
        self.ab = None
        self.raw_turn = self.sampling = None
        self.show(RunState(model=self.model))

    # -- yours and shown (app/session/guest.py) -----------------------------------------------
    @property
    def own_conversation(self) -> Conversation:
        """The person's own conversation (the one behind a guest, if one is shown)."""
        return self.guest.own.conversation if self.guest is not None else self.conversation

    def _workspace(self) -> Workspace:
        return Workspace(
            self.conversation, self.raw_turn, self.shown, self.shown_turn, self.editing_turn
        )

    @announces
    def view(
        self,
        state: RunState,
        source: str,
        line: str,
        *,
        run=None,
        conversation: Conversation | None = None,
        raw_turn: Turn | None = None,
        turn: int | None = None,
    ) -> None:
        """Show `state`, a run from elsewhere, read-only under `line` (where it came
        from); the person's own workspace waits behind it (only one: a guest shown over
        a guest replaces it). `conversation`/`raw_turn`/`turn`: the guest's own, drawn
        in the transcript and the Branches tree."""
        own = self.guest.own if self.guest is not None else self._workspace()
        self.guest = Guest(source, line, own, run)
        self.conversation = conversation if conversation is not None else Conversation()
        self.raw_turn = raw_turn
        self.editing_turn = self.ab = self.sampling = None
        self.show(state, turn, viewing=run)

    @announces
    def leave_guest(self) -> bool:
        """Put the person's own workspace back (Run, or Back to your conversation);
        False when no guest was on screen."""
        guest = self.guest
        if guest is None:
            return False
        own, self.guest = guest.own, None
        self.conversation, self.raw_turn = own.conversation, own.raw_turn
        self.editing_turn = own.editing_turn
        self.show(own.shown, own.shown_turn)
        return True

    @announces
    def adopt(self) -> RunState | None:
        """Continue from here: the guest's conversation becomes the person's own (what
        they had stays in History); returns the run whose model and settings the next
        Run takes, None when no guest was on screen."""
        if self.guest is None:
            return None
        self.guest = self.viewing = None
        self.events.note("shown_changed", self.shown)
        self.events.note("conversation_changed")
        return self.shown

    @announces
    def set_aside(self, title: str) -> SetAside:
        """Open a guest workspace (the tour): the person's conversation, what was on
        screen and their History session are put aside whole, and the runs from now on
        go to an empty conversation and a History session called `title`. `bring_back`
        undoes it exactly."""
        saved = SetAside(
            self._workspace(), self.viewing, self.guest, self.journal, self.journal_title
        )
        self.journal, self.journal_title = None, title
        self.clear_conversation()
        self.events.note("journal_changed", None)
        return saved

    @announces
    def bring_back(self, saved: SetAside) -> None:
        """Close the guest workspace and put back what `set_aside` took, as it was."""
        self.close_journal()
        own = saved.own
        self.conversation, self.raw_turn = own.conversation, own.raw_turn
        self.editing_turn, self.guest = own.editing_turn, saved.guest
        self.journal, self.journal_title = saved.journal, saved.journal_title
        self.ab = self.sampling = None
        self.show(own.shown, own.shown_turn, viewing=saved.viewing)
        self.events.note("journal_changed", self.journal)

    def next_turn(self, text: str) -> int:
        """The turn Run would give `text` in the person's own conversation: the turn
        being edited, the last turn again (its own message, or an empty box), or a new
        turn."""
        own = self.guest.own if self.guest is not None else None
        turns = self.own_conversation.turns
        editing = own.editing_turn if own is not None else self.editing_turn
        if editing is not None:
            return min(editing, len(turns))
        if turns and text in ("", turns[-1].user):
            return len(turns) - 1
        return len(turns)

    def next_prompt(self, text: str, chat: bool) -> tuple[int, object]:
        """(turn number shown to the person, what Run would send) for `text`."""
        if not chat:
            return 1, text
        turn, conv = self.next_turn(text), self.own_conversation
        return conv.dropped + turn + 1, conv.prompt(text, turn)

    def fit_by_dropping(self, text: str, upto: int, overflows: Callable[[object], bool]) -> int:
        """Drop the oldest turns until `text` after turns[:upto] fits; returns how many.
        `overflows(prompt)` says whether a prompt and its answer exceed the context."""
        conv, dropped = self.conversation, 0
        while upto > 0 and overflows(conv.prompt(text, upto)):
            conv.drop_oldest()
            upto -= 1
            dropped += 1
        return dropped

    @announces
    def begin(self, text: str, turn: int, state: RunState) -> tuple[object, dict | None]:
        """Start `state` as turn `turn` answering `text`: a new sibling run there (the
        runs it replaces stay in the tree and in History). Returns (what the engine
        is sent, the journal's conversation field); raw completion is single-turn.
        A guest on screen gives way first: a run always continues the person's own."""
        if self.leave_guest():
            turn = min(turn, len(self.conversation))
        chat = state.settings.chat_template
        if not chat:
            if self.conversation.root is not None:
                self.conversation = Conversation()
            turn = 0
        conv = self.conversation
        turn = min(turn, len(conv))
        prompt = conv.prompt(text, turn) if chat else text
        state.earlier = conv.earlier_spans(turn)
        state.kv_growth = conv.kv_growth(turn)
        state.sent = prompt
        if state.model is None and state.runs_on is None:  # an escalation: its own, once loaded
            state.model = self.model
        info = conv.journal_info(turn) if chat else None
        if chat:
            self._running = conv.add_run(turn, text, state)
        else:  # raw completion: a turn of its own, outside the conversation
            self._running = Answer(text, state)
            self.raw_turn = Turn([self._running])
        self.show(state, turn if chat else None)
        self.editing_turn = None
        return prompt, info

    @announces
    def run_ended(self) -> str | None:
        """A run that failed or was cancelled before its first token takes its turn
        back; returns its message (for the prompt box), else None."""
        state, answer, self._running = self.shown, self._running, None
        self.events.note("conversation_changed")
        failed = state.error is not None or (
            state.done is not None and state.done.finish_reason == "cancelled"
        )
        if not failed or answer is None or answer.state is not state:
            return None
        if answer.parent is not None:  # a branch that failed: back to its parent
            if not state.tokens[state.branch_step or 0 :]:
                home = self.home_of(answer)
                if home is not None:
                    home.delete(answer)
                    self.show_answer(home.answer)
            return None
        if state.tokens:
            return None
        if self.raw_turn is not None and answer in self.raw_turn.answers:
            self.raw_turn = None
        else:
            self.conversation.remove(answer)
        self.shown_turn = None
        return answer.user

    @announces
    def show_turn(self, turn: int) -> RunState | None:
        """Put an earlier turn on screen; None when only its text is known."""
        turns = self.conversation.turns
        if not 0 <= turn < len(turns) or turns[turn].state is None:
            return None
        self.show(turns[turn].state, turn)
        return self.shown

    @announces
    def switch_sibling(self, turn: int, sibling: int) -> RunState | None:
        """Show another run of turn `turn` (a regenerate or an edit), with what followed it."""
        answer = self.conversation.switch(turn, sibling)
        self.events.note("conversation_changed")
        if answer.state is not None:
            self.show(answer.state, turn)
        return answer.state

    @announces
    def restore(self, run, state: RunState, same_session_runs, state_of, line: str = "") -> None:
        """Reopen `run` (a RunLog) from History, as a guest, with the conversation it
        ended; earlier turns get their own runs back from the same session's runs when
        recorded. The next Run continues the person's own conversation, not this one."""
        info = run.conversation or {}
        messages = run.messages
        users = sum(m["role"] == "user" for m in messages)
        first = int(info.get("turn", users)) - users
        conv = Conversation.from_messages(info.get("conversation_id"), messages, first)
        turns = conv.turns
        for other in same_session_runs if info else ():
            c = other.conversation or {}
            j = int(c.get("turn", -1)) - conv.dropped
            same = c.get("conversation_id") == conv.conversation_id and 0 <= j < len(turns)
            if same and turns[j].user == other.prompt and other.done is not None:
                turns[j].state = state_of(other)
        answer = conv.add_run(len(turns), run.prompt, state)
        turn = len(turns)
        state.earlier = conv.earlier_spans(turn)
        state.kv_growth = conv.kv_growth(turn)
        add_family(conv.turn_at(turn), answer, run, same_session_runs, state_of)
        self.view(state, FROM_HISTORY, line, run=run, conversation=conv, turn=turn)

    @announces
    def restore_raw(
        self, run, state: RunState, same_session_runs, state_of, line: str = ""
    ) -> None:
        """Reopen a raw-completion run or a read from History, as a guest, with its
        branches (a read is never a chat turn)."""
        answer = Answer(run.prompt, state)
        raw = Turn([answer])
        add_family(raw, answer, run, same_session_runs, state_of)
        self.view(state, FROM_HISTORY, line, run=run, raw_turn=raw)

    # -- branches -----------------------------------------------------------------------------
    def home(self) -> Turn | None:
        """The turn holding the run on screen (a conversation turn or the raw run's)."""
        if self.shown_turn is not None and self.shown_turn < len(self.conversation):
            return self.conversation.turn_at(self.shown_turn)
        raw = self.raw_turn
        if raw is not None and any(a.state is self.shown for a in raw.answers):
            return raw
        return None

    def home_of(self, answer: Answer) -> Turn | None:
        """The turn holding `answer`: the raw run's, or one on the conversation's path."""
        if self.raw_turn is not None and answer in self.raw_turn.answers:
            return self.raw_turn
        index = self.conversation.turn_of(answer)
        return self.conversation.turn_at(index) if index is not None else None

    def shown_answer(self) -> Answer | None:
        """The answer whose run is on screen, if it is in a turn."""
        home = self.home()
        if home is None:
            return None
        return next((a for a in home.answers if a.state is self.shown), None)

    @announces
    def begin_branch(self, parent: Answer, step: int, kind: str, state: RunState):
        """Start `state` as a branch of `parent` at answer `step`: a sibling run of
        its turn with the parent's prompt, made current and shown. Returns (what the
        engine is sent, the journal's conversation field)."""
        home = self.home_of(parent)
        if self.guest is not None:
            raise ValueError("the run on screen is shown from elsewhere, read-only")
        if home is None:
            raise ValueError("the run to branch from is not in this conversation")
        ps = parent.state
        state.sent, state.earlier, state.kv_growth = ps.sent, ps.earlier, ps.kv_growth
        state.branch = {"parent": ps.run_id, "step": step, "kind": kind}
        if state.model is None:
            state.model = ps.model
        self._running = home.add_branch(parent, step, kind, state)
        turn = None if home is self.raw_turn else self.conversation.turn_of(self._running)
        info = self.conversation.journal_info(turn) if turn is not None else None
        self.show(state, turn)
        return ps.engine_prompt, info

    @announces
    def show_answer(self, answer: Answer) -> RunState | None:
        """Show `answer` (a run of a turn: a branch or its parent), making it current."""
        self.events.note("conversation_changed")
        home = self.home_of(answer)
        if home is None or answer.state is None:
            return None
        home.current = home.answers.index(answer)
        turn = None if home is self.raw_turn else self.conversation.turn_of(answer)
        self.show(answer.state, turn)
        return answer.state

    @announces
    def delete_branch(self, answer: Answer) -> Answer | None:
        """Take a run out of its turn (History's bin keeps it); the turn's remaining
        current answer is shown. None when it was the turn's only run."""
        home = self.home_of(answer)
        if home is None or len(home.answers) < 2:
            return None
        home.delete(answer)
        self.show_answer(home.answer)
        return home.answer

    # -- cold vs cached A/B -------------------------------------------------------------------
    def start_ab(self) -> int | None:
        """Begin the A/B on the last turn; returns that turn (None: no turn yet)."""
        if not self.conversation.turns:
            return None
        self.ab = ABTest(len(self.conversation.turns) - 1)
        return self.ab.turn

    def ab_next(self) -> str | None:
        """After a run of the A/B ended: 'cached' (run it from the cache next),
        'result' (both done: `ab_result` holds them) or 'stopped' (it failed)."""
        ab = self.ab
        if ab is None:
            return None
        done = self.shown.done
        if done is None or self.shown.error is not None:
            self.ab = None
            return "stopped"
        if ab.cold is None:
            ab.cold = done
            return "cached"
        ab.cached = done
        self.ab_result, self.ab = (ab.cold, ab.cached), None
        return "result"


def _load_key(record) -> tuple | None:
    """What makes a loaded model another one for the views: its place and the load
    options that shape its context (a server's record differs at each load in load_s)."""
    if record is None:
        return None
    return (record.path, record.context_length, record.kv_bits, record.load_options)
