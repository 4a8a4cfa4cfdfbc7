"""Conversation: the playground's turns (your message, the model's answer), without Qt.

Each turn keeps the RunState of the run that answered it, so any turn can be
shown again with its charts. The next prompt is sent as the whole conversation
(earlier messages + the new one); the engine's prompt cache, keyed on token ids,
then prefills only what is new. Thinking tokens are never sent back: a turn's
answer is its text outside the thinking block.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from app.run_state import RunState


@dataclass
class Turn:
    user: str
    state: RunState | None  # None: known only from a reopened run's messages
    answer_text: str = ""  # used when `state` is None

    @property
    def answer(self) -> str:
        if self.state is None:
            return self.answer_text
        return "".join(t.text for t in self.state.tokens if not getattr(t, "thinking", False))

    @property
    def span(self) -> tuple[int, int] | None:
        """(prompt tokens, prompt + answer tokens) of this turn's run, if it reported them."""
        s = self.state
        if s is None or not s.prompt_tokens:
            return None
        return s.prompt_tokens, s.prompt_tokens + s.output_steps


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)
    conversation_id: str = field(default_factory=lambda: secrets.token_hex(4))
    dropped: int = 0  # oldest turns dropped to fit the context (turn numbers go on)

    def __len__(self) -> int:
        return len(self.turns)

    def messages(self, upto: int | None = None) -> list[dict]:
        """The turns before `upto` (all by default) as chat messages."""
        out: list[dict] = []
        for t in self.turns[:upto]:
            out.append({"role": "user", "content": t.user})
            if t.answer.strip():  # a template refuses an empty message; a cancelled
                out.append({"role": "assistant", "content": t.answer})  # turn adds nothing
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
        return [t.span for t in self.turns[:upto] if t.span is not None]

    def kv_growth(self) -> list[int]:
        """The KV cache's bytes after each turn (turns whose run reported it)."""
        out = []
        for t in self.turns:
            d = t.state.done if t.state is not None else None
            if d is not None and d.kv_cache_bytes:
                out.append(d.kv_cache_bytes)
        return out

    def drop_oldest(self) -> Turn | None:
        if not self.turns:
            return None
        self.dropped += 1
        return self.turns.pop(0)

    @classmethod
    def from_messages(
        cls, conversation_id: str | None, messages: list[dict], first_turn: int = 0
    ) -> Conversation:
        """Turns from a journal's messages (user, assistant pairs; a system one is skipped)."""
        conv = cls(conversation_id=conversation_id or secrets.token_hex(4))
        conv.dropped = max(first_turn, 0)
        for m in messages:
            if m["role"] == "user":
                conv.turns.append(Turn(m["content"], None))
            elif m["role"] == "assistant" and conv.turns:
                conv.turns[-1].answer_text = m["content"]
        return conv
