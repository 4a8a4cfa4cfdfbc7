"""Numbers for comparing runs: per-run summary and where two runs diverge."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.run.records import DoneRecord, TokenRecord


@dataclass(frozen=True)
class RunSummary:
    """One run's statistics as Compare shows them; None where not reported."""

    prompt_tokens: int | None
    generated_tokens: int
    ttft_s: float | None
    prefill_tps: float | None
    decode_tps: float | None
    mean_prob: float | None  # mean chosen-token probability (raw, T=1), own choices
    perplexity: float | None  # exp(-mean chosen logprob), end-of-sequence step included
    mean_entropy: float | None  # nats
    finish_reason: str
    forced: int = 0  # tokens chosen by the person (a branch), left out of mean p and perplexity


def summarize(tokens: list[TokenRecord], done: DoneRecord | None) -> RunSummary:
    """Every step the model chose counts, the end-of-sequence one too (choosing to stop
    is a choice); a token forced by the person (a branch) is not the model's choice
    and is left out of mean p and perplexity (`forced` says how many were)."""
    from engine.run.series import decode_rate

    own = [t for t in tokens if not getattr(t, "forced", False)]
    n = len(own)
    # Means only over what every step reports: a server that leaves a value out
    # gives "not reported", never a mean over part of the run.
    lps, probs, ents = ([getattr(t, k) for t in own] for k in ("logprob", "prob", "entropy"))
    whole = lambda xs: n and all(x is not None for x in xs)  # noqa: E731
    mean_lp = sum(lps) / n if whole(lps) else None
    return RunSummary(
        prompt_tokens=done.prompt_tokens if done else 0,
        generated_tokens=done.generated_tokens if done else sum(not t.eos for t in tokens),
        ttft_s=done.ttft_s if done else None,
        prefill_tps=done.prefill_tps if done else None,
        decode_tps=done.decode_tps if done else decode_rate([t.elapsed_s for t in tokens]),
        mean_prob=sum(probs) / n if whole(probs) else None,
        perplexity=math.exp(-mean_lp) if mean_lp is not None else None,
        mean_entropy=sum(ents) / n if whole(ents) else None,
        finish_reason=done.finish_reason if done else "—",
        forced=len(tokens) - n,
    )


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first step where both runs produced a token and the tokens differ.

    Token lists include the end-of-sequence step, so a run that stopped where
    the other went on diverges there. None when they agree on every step both
    have (identical, or one was cut off by its token limit).
    """
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None
