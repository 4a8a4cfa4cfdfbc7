"""What a read's DoneRecord carries: `ReadSummary`, plain values only.

GLTR's rank buckets count the tokens whose rank under the model (1 = the model's
own first choice) is within the top 10, the top 100, the top 1,000, or beyond.
Perplexity is exp(mean negative log-likelihood per token); bits per byte is the
same total in bits over the text's UTF-8 bytes, so models with different
tokenizers can be compared. This module imports nothing of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

RANK_BUCKETS = (10, 100, 1000)  # GLTR: top 10, top 100, top 1,000, then beyond
BUCKET_NAMES = ("top 10", "top 100", "top 1,000", "beyond")


def rank_bucket(rank: int) -> int:
    """The GLTR bucket of a 1-based rank: 0 (top 10) .. 3 (beyond the top 1,000)."""
    for i, limit in enumerate(RANK_BUCKETS):
        if rank <= limit:
            return i
    return len(RANK_BUCKETS)


@dataclass(frozen=True)
class Surprise:
    """One of the text's most surprising tokens.

    Attributes:
        step: its position in the text (0 = the text's first token).
        text: the token as shown (bytes where it is not whole UTF-8).
        logprob: its log-probability under the model (nats).
        rank: its rank in the vocabulary (1 = the model's first choice), or None.
        expected: the model's first choice there, as shown ("" when unknown).
    """

    step: int
    text: str
    logprob: float
    rank: int | None
    expected: str = ""


@dataclass(frozen=True)
class ReadSummary:
    """The numbers of one read (a DoneRecord's `read`).

    Attributes:
        tokens: tokens of the text scored (all of them unless cancelled).
        text_bytes: UTF-8 bytes of the text those tokens cover.
        nll: their total negative log-likelihood, in nats.
        perplexity: exp(nll / tokens); None when no token was scored.
        bits_per_byte: nll / ln 2 / text_bytes; None without bytes.
        rank_buckets: tokens in GLTR's buckets (top 10, top 100, top 1,000, beyond).
        surprising: the least likely tokens, least likely first.
        context_tokens: tokens before the text (the context, or the start token).
        start_token: the start token the text was read after ("" with a context).
        window: the sliding window's size in tokens, or None when the text fit.
        window_keep: tokens kept as context when the window slides (None: no slide).
        context_length: the model's context window.
        read_s: seconds the read took; read_tps: tokens scored per second.
        complete: False when the read was cancelled (the numbers cover what was read).
    """

    tokens: int
    text_bytes: int
    nll: float
    perplexity: float | None
    bits_per_byte: float | None
    rank_buckets: tuple[int, ...]
    surprising: tuple[Surprise, ...]
    context_tokens: int
    start_token: str
    window: int | None
    window_keep: int | None
    context_length: int | None
    read_s: float
    read_tps: float | None
    complete: bool = True

    @classmethod
    def from_dict(cls, d: dict) -> ReadSummary:
        """Rebuild from `dataclasses.asdict` output (or its JSON round-trip); unknown
        keys are ignored.

        Raises:
            TypeError: a required field is missing.
        """
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["rank_buckets"] = tuple(kw.get("rank_buckets", ()))
        kw["surprising"] = tuple(
            s if isinstance(s, Surprise) else Surprise(**s) for s in kw.get("surprising", ())
        )
        return cls(**kw)
