"""Branching: continue an answer from any step, with a token of the person's choice
or freshly sampled.

A `Continuation` says where a branch starts: the parent answer's first `step`
token ids (the shared prefix, whose keys and values the engine reuses from its
KV cache) and, for "continue with ' X' from step K", the token forced at step K.
Without a forced token the engine samples step K onwards ("Sample N futures").

The engine yields records from step K on; `with_prefix` puts the parent's first K
token records in front, so every consumer (the window, the command line, the
journal) gets a whole answer. Nothing here knows about MLX or Qt.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from engine.errors import SettingsError
from engine.run.records import Record, TokenRecord, to_dict

SAMPLE_N = 8  # "Sample N futures": how many by default
SEED_RULE = "sample i of N (from 0) runs with seed S + i"


@dataclass(frozen=True)
class Continuation:
    """Where a branch starts and what it starts with.

    Attributes:
        prefix: the token ids of the parent answer's steps 0..step-1.
        forced: the token id put at `step` by the person; None: sample it.
        forced_text: the forced token as text (one token of the model's vocabulary,
            resolved by the engine) when its id is not known.
        at_step: the parent's token record at `step` (as a dict): its distribution,
            so the forced step needs no recomputation when the token is among its
            candidates.
    """

    prefix: tuple[int, ...] = ()
    forced: int | None = None
    forced_text: str | None = None
    at_step: dict | None = None
    prefix_text: str = ""  # the prefix as text (a server continues from text)

    @property
    def step(self) -> int:
        """The branch point: the answer step the continuation starts at."""
        return len(self.prefix)

    @property
    def is_forced(self) -> bool:
        return self.forced is not None or self.forced_text is not None

    def to_dict(self) -> dict:
        return {
            "prefix": list(self.prefix),
            "forced": self.forced,
            "forced_text": self.forced_text,
            "at_step": self.at_step,
            "prefix_text": self.prefix_text,
        }

    def validate(self) -> Continuation:
        """Check the ids and texts (a Continuation crosses the process pipe as itself).

        Returns:
            self, unchanged.

        Raises:
            SettingsError: ids that are not non-negative integers, an empty forced text.
        """
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in self.prefix):
            raise SettingsError("a branch's prefix must be token ids (integers)")
        forced = self.forced
        if forced is not None and (not isinstance(forced, int) or isinstance(forced, bool)):
            raise SettingsError(
                f"the forced token id must be a non-negative integer, not {forced!r}"
            )
        text = self.forced_text
        if text is not None and (not isinstance(text, str) or not text):
            raise SettingsError("the forced token's text is empty: type the token to continue with")
        if not isinstance(self.prefix_text, str):
            raise SettingsError("a branch's prefix text must be text")
        return self

    @classmethod
    def from_dict(cls, d: dict | None) -> Continuation | None:
        """A Continuation from `to_dict` output (None stays None), validated.

        Raises:
            SettingsError: ids that are not non-negative integers.
        """
        if d is None:
            return None
        return cls(
            tuple(d.get("prefix") or ()),
            d.get("forced"),
            d.get("forced_text"),
            d.get("at_step"),
            d.get("prefix_text") or "",
        ).validate()


def continuation_from(
    tokens: list[TokenRecord],
    step: int,
    token_id: int | None = None,
    text: str | None = None,
) -> Continuation:
    """The Continuation that branches `tokens` (a parent answer) at `step`.

    Args:
        tokens: the parent's token records, by step.
        step: the branch point, 0 (the start of the answer) to len(tokens).
        token_id: the token to force at `step`; None with `text` None: sample.
        text: the token to force, as text (resolved by the engine).

    A local model continues from the prefix's token ids, a server from its text
    (`prefix_text`, and the forced candidate's text): server runs may name tokens by
    text only (negative stand-in ids).

    Raises:
        SettingsError: a step outside the answer.
    """
    if not 0 <= step <= len(tokens):
        raise SettingsError(
            f"step {step} is outside the answer: choose a step from 0 to {len(tokens)}"
        )
    prefix = tuple(t.token_id for t in tokens[:step])
    raw = [t.bytes for t in tokens[:step]]
    if all(b is not None for b in raw):
        prefix_text = b"".join(bytes(b) for b in raw if b).decode("utf-8", "replace")
    else:
        prefix_text = "".join(t.text for t in tokens[:step])
    at = to_dict(tokens[step]) if step < len(tokens) else None
    if token_id is not None and text is None and step < len(tokens):
        for c in tokens[step].top:  # its text too, for a server (which has no ids)
            if c.token_id == token_id:
                text = bytes(c.bytes).decode("utf-8", "replace") if c.bytes else c.text
    return Continuation(prefix, token_id, text, at, prefix_text)


def with_prefix(
    parent: list[TokenRecord], step: int, records: Iterable[Record]
) -> Iterator[Record]:
    """The parent's first `step` token records, then `records` (the engine's, from
    `step` on), so a branch reads as a whole answer. The prefix goes in before the
    run's first prefill, token or done record (a run refused at once gets none),
    stamped at 0 s with no latency: this run reused them, it did not generate them."""
    sent = False
    for r in records:
        if not sent and r.type in ("prefill", "token", "done"):
            yield from (replace(t, elapsed_s=0.0, latency_s=0.0) for t in parent[:step])
            sent = True
        yield r


def own_choices(tokens: list[TokenRecord]) -> list[TokenRecord]:
    """The steps the model chose itself: forced tokens left out."""
    return [t for t in tokens if not getattr(t, "forced", False)]
