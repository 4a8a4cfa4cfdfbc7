"""Numbers for comparing runs: per-run summary and where two runs diverge."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.records import DoneRecord, TokenRecord


@dataclass(frozen=True)
class RunSummary:
    prompt_tokens: int
    generated_tokens: int
    ttft_s: float
    prefill_tps: float
    decode_tps: float
    mean_prob: float  # mean chosen-token probability (raw, T=1)
    perplexity: float  # exp(-mean chosen logprob) of the generated text under the model
    mean_entropy: float  # nats
    finish_reason: str


def summarize(tokens: list[TokenRecord], done: DoneRecord | None) -> RunSummary:
    n = len(tokens)
    mean_lp = sum(t.logprob for t in tokens) / n if n else 0.0
    return RunSummary(
        prompt_tokens=done.prompt_tokens if done else 0,
        generated_tokens=done.generated_tokens if done else n,
        ttft_s=done.ttft_s if done else 0.0,
        prefill_tps=done.prefill_tps if done else 0.0,
        decode_tps=done.decode_tps if done else 0.0,
        mean_prob=sum(t.prob for t in tokens) / n if n else 0.0,
        perplexity=math.exp(-mean_lp) if n else 0.0,
        mean_entropy=sum(t.entropy for t in tokens) / n if n else 0.0,
        finish_reason=done.finish_reason if done else "—",
    )


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first step where both runs produced a token and the tokens differ.

    None when they agree on every step both have (identical, or one stopped
    earlier: the journal keeps no end-of-text token to compare against).
    """
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None
