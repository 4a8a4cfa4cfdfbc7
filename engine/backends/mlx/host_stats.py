"""A greedy step's statistics computed by NumPy on a helper thread (CPU devices).

At T = 0 the sampler only needs the argmax; everything a record shows beyond the
token (the raw distribution's log-probabilities, entropy, top candidates and the
temperature sweep; the sampled-from distribution is one-hot) is for the charts.
On MLX's CPU build each pass over a 49,152-token vocabulary costs about as much
as a small model's whole step, so there the device computes the argmax alone and
this module computes the rest in float64 from the step's logits, while the next
step runs (engine/backends/mlx/decode.py). Same numbers as the device path (tests
compare them), off the critical path.
"""

from __future__ import annotations

import math

import numpy as np

from engine.backends.mlx.host_sweep import SWEEP_EXACT, scratch, sweep_from_head, top_indices
from engine.backends.mlx.instrument import NEG_INF, StepStats


def greedy_sampler(settings, vocab_size: int):
    """`sample(logits (1, V), history, forced) -> (token (1,), argmax (1,),
    log-probabilities (V,))` for a greedy run on the CPU: on the device exactly what
    mlx-lm's own greedy step computes (logits - logsumexp, the argmax after the
    repetition penalty), so the chosen token's log-probability is bare mlx-lm's; the
    rest later from `greedy_stats`."""
    import mlx.core as mx

    from engine.backends.mlx.instrument import repetition_penalty

    n = min(settings.top_n, vocab_size - 1)
    penalty = settings.repetition_penalty

    def sample(logits, history, forced: int | None = None):
        """Greedy pick (or `forced`); the raw logits go back for the host statistics."""
        logits = logits.astype(mx.float32)
        lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)  # as mlx-lm's step
        pen = repetition_penalty(logits, history, penalty) if penalty != 1.0 else lp
        greedy = mx.argmax(pen[0], keepdims=True)
        token = greedy if forced is None else mx.array([forced], dtype=mx.uint32)
        return token, greedy, lp[0]

    sample.n = n
    sample.host = True
    return sample


def greedy_stats(raw: np.ndarray, token_id: int, greedy_id: int, n: int) -> StepStats:
    """A greedy step's StepStats from its log-probabilities as the device computed
    them (float32, (V,); as mlx-lm's): `token_id` was chosen (the argmax `greedy_id`,
    unless the person forced another). exp in float32 (as the device's), sums in
    float64: the entropy is within ~1e-7 of a float64 computation."""
    top = raw.max()
    v = raw.shape[0]
    shifted = np.subtract(raw, top, out=scratch("shifted", v, raw.dtype))  # as the device's
    e = np.exp(shifted, out=scratch("exp", v, raw.dtype))
    z = float(e.sum(dtype=np.float64))  # the sums in float64
    with np.errstate(invalid="ignore"):
        terms = np.multiply(e, shifted, out=scratch("terms", v, raw.dtype))
    acc = float(terms.sum(dtype=np.float64))
    if math.isnan(acc):  # a -inf entry: its term is 0 * -inf, which adds nothing
        acc = float(np.nansum(terms, dtype=np.float64))
    entropy = math.log(z) - acc / z
    k = min(max(n, 1), raw.shape[0])
    head = top_indices(raw, max(k, SWEEP_EXACT))  # one search serves both
    top_ids = [int(i) for i in head[:k]]
    top_lp = [float(v) for v in raw[head[:k]]]
    chosen = float(raw[token_id])
    s_ids = [greedy_id, *top_ids[: k - 1]]
    s_lp = [0.0] + [NEG_INF] * (k - 1)
    # From the same log-probabilities as the record's: the temperature chart divides
    # one by the other, so a float32 log Z's error cancels.
    logz_t, ent_t = sweep_from_head(raw, head[:SWEEP_EXACT])
    return StepStats(
        token_id=token_id,
        logprob=chosen,
        sampled_logprob=0.0 if token_id == greedy_id else NEG_INF,
        entropy=entropy,
        sampled_entropy=0.0,
        top_ids=top_ids,
        top_logprobs=top_lp,
        sampled_top_ids=s_ids,
        sampled_top_logprobs=s_lp,
        sampled_probs=[1.0 if i == greedy_id else 0.0 for i in top_ids],
        sweep_logz=logz_t,
        sweep_entropy=ent_t,
    )
