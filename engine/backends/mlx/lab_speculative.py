"""Speculative decoding, greedy, with every draft kept for the view.

A draft model proposes k tokens one by one; the target checks all of them in
one pass (k + 1 positions). The longest prefix the target agrees with is
accepted, the target's own token at the first disagreement (or after all k)
is added, and both KV caches are rewound to what was kept. At T = 0 the output
is exactly the target's greedy output. Modelled on mlx-lm's
`speculative_generate_step`, which neither reports rejected drafts nor stops at
end-of-sequence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import mlx.core as mx


@dataclass
class Round:
    """One target pass: what the draft proposed and what the target kept."""

    drafted: list[int]
    accepted: int  # leading drafts the target agreed with
    correction: int  # the target's token after them (its own choice)
    draft_probs: list[float] = field(default_factory=list)  # draft's p of each draft
    target_probs: list[float] = field(default_factory=list)  # target's p of each draft

    @property
    def rejected(self) -> int:
        """Drafted tokens the target did not accept."""
        return len(self.drafted) - self.accepted


@dataclass
class SpecResult:
    """One speculative run: its tokens, its rounds (target passes) and seconds taken."""

    tokens: list[int]
    rounds: list[Round]
    seconds: float

    @property
    def drafted(self) -> int:
        """Tokens the draft proposed in all."""
        return sum(len(r.drafted) for r in self.rounds)

    @property
    def accepted(self) -> int:
        """Drafted tokens the target accepted in all."""
        return sum(r.accepted for r in self.rounds)

    @property
    def acceptance(self) -> float:
        """accepted / drafted (0.0 when nothing was drafted)."""
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_pass(self) -> float:
        """Tokens produced per target pass, the prefill pass included."""
        return len(self.tokens) / max(len(self.rounds) + 1, 1)  # + the prefill pass


def _softmax_row(logits: mx.array) -> mx.array:
    return mx.softmax(logits.astype(mx.float32), axis=-1)


def speculative_greedy(
    target, draft, prompt_ids: list[int], k: int, max_tokens: int, eos: set[int]
) -> SpecResult:
    """Greedy speculative decoding: `draft` proposes `k` tokens, `target` verifies them.

    Returns:
        Its tokens (at most `max_tokens`, ending at an `eos` id) and rounds.
    """
    from mlx_lm.models.cache import make_prompt_cache, trim_prompt_cache

    t0 = time.perf_counter()
    t_cache, d_cache = make_prompt_cache(target), make_prompt_cache(draft)
    prompt = mx.array(prompt_ids)[None]
    first = int(mx.argmax(target(prompt, cache=t_cache)[0, -1]).item())
    mx.eval(draft(prompt[:, :-1], cache=d_cache)) if len(prompt_ids) > 1 else None
    d_pending = [prompt_ids[-1]]  # tokens the draft has not seen yet
    out, rounds = [first], []
    while len(out) < max_tokens and out[-1] not in eos:
        y = out[-1]
        d_pending.append(y)
        drafts, d_probs = [], []
        for _ in range(min(k, max_tokens - len(out))):
            logits = draft(mx.array(d_pending)[None], cache=d_cache)[0, -1]
            probs = _softmax_row(logits)
            tok = int(mx.argmax(probs).item())
            drafts.append(tok)
            d_probs.append(float(probs[tok].item()))
            d_pending = [tok]
        t_logits = target(mx.array([y, *drafts])[None], cache=t_cache)[0]
        t_probs = _softmax_row(t_logits)
        choice = mx.argmax(t_probs, axis=-1).tolist()
        n = 0
        while n < len(drafts) and drafts[n] == choice[n]:
            n += 1
        kept_probs = [float(t_probs[i, d].item()) for i, d in enumerate(drafts)]
        rounds.append(Round(drafts, n, choice[n], d_probs, kept_probs))
        trim_prompt_cache(t_cache, len(drafts) - n)  # keep y and the accepted drafts
        # The draft has seen y and drafts[:-1]; keep y and the accepted ones.
        seen_kept = min(n, len(drafts) - 1)
        trim_prompt_cache(d_cache, len(drafts) - 1 - seen_kept)
        d_pending = drafts[seen_kept:n]  # accepted but not yet seen by the draft
        for tok in [*drafts[:n], choice[n]]:
            out.append(tok)
            if tok in eos or len(out) >= max_tokens:
                break
    return SpecResult(out, rounds, time.perf_counter() - t0)


def plain_greedy(
    model, prompt_ids: list[int], max_tokens: int, eos: set[int]
) -> tuple[list, float]:
    """The target alone, greedy, with its KV cache: (tokens, seconds)."""  # noqa: D401
    from engine.backends.mlx.lab_quant import greedy_answer

    t0 = time.perf_counter()
    tokens = greedy_answer(model, prompt_ids, max_tokens, eos)
    return tokens, time.perf_counter() - t0
