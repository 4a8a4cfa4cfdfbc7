"""The conversation as a tree of turns, without Qt.

A Turn is one place in the conversation. It holds one or more Answers: sibling
runs of that place (a regenerate, an edit of the message, a branch), one of them
current. A branch knows its parent answer and the step it continued from, so a
turn's answers form a tree (engine/sessions/branch_tree.py draws it). Each Answer
knows the message it answered, its run (a RunState, or only its text when
reopened from a journal that lacks the run) and the turn that followed it, so
switching to a sibling brings back its own continuation.
The conversation on screen is the path of current answers from the root.

The next prompt is sent as that path's messages plus the new one; the engine's
prompt cache, keyed on token ids, prefills only what is new. Thinking tokens are
never sent back: an answer's text is its tokens outside the thinking block.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from app.session.run_state import RunState


@dataclass(eq=False)
class Answer:
    """One run of a turn: the message it answered, its run and what came next."""

    user: str
    state: RunState | None  # None: known only from a reopened run's messages
    answer_text: str = ""  # used when `state` is None
    next: Turn | None = None  # the turn that followed this answer
    parent: Answer | None = None  # a branch: the answer it continued
    branch_step: int | None = None  # a branch: the answer step it continued from
    branch_kind: str = ""  # forced (a token chosen by the person) | sample
    name: str = ""  # given in the Branches view

    @property
    def answer(self) -> str:
        if self.state is None:
            return self.answer_text
        return "".join(t.text for t in self.state.tokens if not getattr(t, "thinking", False))

    @property
    def span(self) -> tuple[int, int] | None:
        """(prompt tokens, prompt + answer tokens) of this run, if it reported them."""
        s = self.state
        if s is None or not s.prompt_tokens:
            return None
        return s.prompt_tokens, s.prompt_tokens + s.output_steps


def reparent(child: Answer, gone: Answer) -> None:
    """`gone` (the parent of `child`) leaves the tree: `child` hangs from `gone`'s parent,
    from the first step where the two differ (min of the two branch steps; a root
    leaves its branches roots)."""
    if gone.parent is None:
        child.parent, child.branch_step, child.branch_kind = None, None, ""
        return
    if gone.branch_step is not None and child.branch_step is not None:
        if gone.branch_step < child.branch_step:
            child.branch_kind = gone.branch_kind
        child.branch_step = min(gone.branch_step, child.branch_step)
    child.parent = gone.parent


@dataclass(eq=False)
class Turn:
    """A place in the conversation: its sibling answers, one current."""

    answers: list[Answer] = field(default_factory=list)
    current: int = 0

    @property
    def answer(self) -> Answer:
        return self.answers[self.current]

    def add_branch(self, parent: Answer, step: int, kind: str, state: RunState | None) -> Answer:
        """A branch of `parent` (one of this turn's answers) from answer step `step`:
        a sibling run of this turn, made current."""
        if parent not in self.answers:
            raise ValueError("a branch's parent must be an answer of the same turn")
        answer = Answer(parent.user, state, parent=parent, branch_step=step, branch_kind=kind)
        self.answers.append(answer)
        self.current = len(self.answers) - 1
        return answer

    def delete(self, answer: Answer) -> None:
        """Take `answer` out of this turn (its branches hang from its parent now); the
        current answer stays current, or the one before it when it was `answer`."""
        current = self.answer
        self.answers.remove(answer)
        for other in self.answers:
            if other.parent is answer:
                reparent(other, answer)
        keep = self.answers.index(current) if current in self.answers else self.current - 1
        self.current = max(0, min(keep, len(self.answers) - 1))


@dataclass
class Conversation:
    """A tree of turns; `path()` is the conversation as shown (current answers)."""

    root: Turn | None = None
    conversation_id: str = field(default_factory=lambda: secrets.token_hex(4))
    dropped: int = 0  # oldest turns dropped to fit the context (turn numbers go on)

    # -- the path on screen -------------------------------------------------------------
    def path(self) -> list[Answer]:
        """The current answer of each turn, from the first."""
        out, turn = [], self.root
        while turn is not None and turn.answers:
            out.append(turn.answer)
            turn = turn.answer.next
        return out

    def turn_at(self, index: int) -> Turn:
        turn = self.root
        for _ in range(index):
            turn = turn.answer.next
        return turn

    @property
    def turns(self) -> list[Answer]:
        return self.path()

    def __len__(self) -> int:
        return len(self.path())

    def messages(self, upto: int | None = None) -> list[dict]:
        """The turns before `upto` (all by default) as chat messages."""
        out: list[dict] = []
        for a in self.path()[:upto]:
            out.append({"role": "user", "content": a.user})
            if a.answer.strip():  # a template refuses an empty message; a cancelled
                out.append({"role": "assistant", "content": a.answer})  # turn adds nothing
        return out

    def prompt(self, text: str, upto: int | None = None):
        """What the engine is sent for a new message `text` after turns[:upto]:
        the text itself for a first turn, else the messages with `text` last."""
        earlier = self.messages(upto)
        return [*earlier, {"role": "user", "content": text}] if earlier else text

    def journal_info(self, turn: int) -> dict:
        return {
            "conversation_id": self.conversation_id,
            "turn": self.dropped + turn,
            "messages": self.messages(turn),
        }

    def earlier_spans(self, upto: int | None = None) -> list[tuple[int, int]]:
        """(start of answer, end of answer) in tokens of each earlier turn that knows them."""
        return [a.span for a in self.path()[:upto] if a.span is not None]

    def kv_growth(self, upto: int | None = None) -> list[int]:
        """The KV cache's bytes after each turn (up to `upto`) whose run reported it."""
        out = []
        for a in self.path()[:upto]:
            d = a.state.done if a.state is not None else None
            if d is not None and d.kv_cache_bytes:
                out.append(d.kv_cache_bytes)
        return out

    # -- changes --------------------------------------------------------------------------
    def add_run(self, index: int, user: str, state: RunState | None) -> Answer:
        """A new run at turn `index`: a sibling of that turn's answers (regenerate, edit)
        made current, or a new last turn when `index` is the path's length. The
        answers it replaces stay in the tree with their own continuations."""
        path = self.path()
        index = max(0, min(index, len(path)))
        answer = Answer(user, state)
        if index == len(path):
            turn = Turn([answer])
            if path:
                path[-1].next = turn
            else:
                self.root = turn
        else:
            turn = self.turn_at(index)
            turn.answers.append(answer)
            turn.current = len(turn.answers) - 1
        return answer

    def turn_of(self, answer: Answer) -> int | None:
        """The index on the path of the turn holding `answer` (None: not on the path)."""
        turn, i = self.root, 0
        while turn is not None and turn.answers:
            if answer in turn.answers:
                return i
            turn, i = turn.answer.next, i + 1
        return None

    def siblings(self, index: int) -> tuple[list[Answer], int]:
        """The answers of turn `index` and which one is current."""
        turn = self.turn_at(index)
        return list(turn.answers), turn.current

    def switch(self, index: int, sibling: int) -> Answer:
        """Make sibling `sibling` of turn `index` current (its continuation follows)."""
        turn = self.turn_at(index)
        if not 0 <= sibling < len(turn.answers):
            raise IndexError(f"turn {index} has {len(turn.answers)} runs")
        turn.current = sibling
        return turn.answer

    def remove(self, answer: Answer) -> bool:
        """Take a run back (it failed before its first token); True if it was there.
        A turn left without answers goes too, and the previous sibling is current."""
        parent, turn = None, self.root
        while turn is not None:
            if answer in turn.answers:
                turn.delete(answer)
                if not turn.answers:
                    if parent is None:
                        self.root = None
                    else:
                        parent.next = None
                return True
            parent, turn = turn.answer, turn.answer.next
        return False

    def drop_oldest(self) -> Answer | None:
        """Drop the first turn (its siblings too): the second becomes the first."""
        if self.root is None or not self.root.answers:
            return None
        first = self.root.answer
        self.root = first.next
        self.dropped += 1
        return first

    @classmethod
    def from_messages(
        cls, conversation_id: str | None, messages: list[dict], first_turn: int = 0
    ) -> Conversation:
        """Turns from a journal's messages (user, assistant pairs; a system one is skipped)."""
        conv = cls(conversation_id=conversation_id or secrets.token_hex(4))
        conv.dropped = max(first_turn, 0)
        last: Answer | None = None
        for m in messages:
            if m["role"] == "user":
                last = conv.add_run(len(conv), m["content"], None)
            elif m["role"] == "assistant" and last is not None:
                last.answer_text = m["content"]
        return conv
