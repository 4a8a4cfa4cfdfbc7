"""Thinking tokens: which generated tokens are a model's reasoning, not its answer.

A model with thinking markers in its vocabulary (the pairs mlx-lm knows:
`<think>…</think>` and the others below) writes its reasoning between them. The
tracker follows the token ids: the markers belong to the thinking block, and a
prompt whose template already opened the block (a generation prompt ending in
`<think>`) starts inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Single-token pairs first, then the multi-token ones (as mlx-lm's tokenizer_utils).
SINGLE = (
    ("<think>", "</think>"),
    ("<longcat_think>", "</longcat_think>"),
    ("<|think:start|>", "<|think:end|>"),
)
MULTI = (
    (("<|channel>", "<channel|>"), "<|channel>thought", "<channel|>"),
    (("<|open|>", "<|close|>", "<|sep|>"), "<|open|>think<|sep|>", "<|close|>think<|sep|>"),
)


@dataclass(frozen=True)
class ThinkMarkers:
    """A model's thinking block markers, as token ids and as text."""

    start: tuple[int, ...]
    end: tuple[int, ...]
    start_text: str
    end_text: str


def _vocab(tokenizer) -> dict:
    vocab = getattr(tokenizer, "vocab", None)
    if not isinstance(vocab, dict):
        get = getattr(tokenizer, "get_vocab", None)
        vocab = get() if callable(get) else {}
    return vocab if isinstance(vocab, dict) else {}


def find_markers(tokenizer) -> ThinkMarkers | None:
    """The model's thinking markers, or None for a model without them."""
    vocab = _vocab(tokenizer)
    for start, end in SINGLE:
        if start in vocab and end in vocab:
            return ThinkMarkers((vocab[start],), (vocab[end],), start, end)
    for needed, start, end in MULTI:
        if all(t in vocab for t in needed):
            enc = tokenizer.encode
            return ThinkMarkers(
                tuple(enc(start, add_special_tokens=False)),
                tuple(enc(end, add_special_tokens=False)),
                start,
                end,
            )
    return None


def _ends_with(seq: list[int], tail: tuple[int, ...]) -> bool:
    return bool(tail) and len(seq) >= len(tail) and tuple(seq[-len(tail) :]) == tail


def _last(seq: list[int], marker: tuple[int, ...]) -> int:
    n = len(marker)
    for i in range(len(seq) - n, -1, -1):
        if tuple(seq[i : i + n]) == marker:
            return i
    return -1


class ThinkTracker:
    """Feed generated token ids in order; `add` says whether each one is thinking."""

    def __init__(self, markers: ThinkMarkers, prompt_ids: list[int]):
        self.markers = markers
        ids = list(prompt_ids)
        self.inside = _last(ids, markers.start) > _last(ids, markers.end)
        keep = max(len(markers.start), len(markers.end))
        self.recent = ids[-keep:] if keep else []
        self.count = 0  # thinking tokens so far

    def add(self, token_id: int) -> bool:
        """Whether this generated token is thinking (the markers themselves count)."""
        m = self.markers
        self.recent = [*self.recent, int(token_id)][-max(len(m.start), len(m.end)) :]
        thinking = self.inside
        if not self.inside and _ends_with(self.recent, m.start):
            self.inside = thinking = True
        elif self.inside and _ends_with(self.recent, m.end):
            self.inside = False  # the closing marker is the block's last token
        self.count += thinking
        return thinking
