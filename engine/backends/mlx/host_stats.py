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

import numpy as np

from engine.backends.mlx.instrument import NEG_INF, StepStats, temperature_sweep_np


def greedy_sampler(settings, vocab_size: int):
    """`sample(logits (1, V), history, forced) -> (token (1,), (argmax, log Z), raw
    logits (V,))` for a greedy run on the CPU: the argmax (after the repetition
    penalty) and log Z on the device (mlx-lm computes the same log Z for its
    log-probabilities, so the chosen token's equals bare mlx-lm's), the rest later
    from `greedy_stats`."""
    import mlx.core as mx

    from engine.backends.mlx.instrument import repetition_penalty

    n = min(settings.top_n, vocab_size - 1)
    penalty = settings.repetition_penalty

    def sample(logits, history, forced: int | None = None):
        """Greedy pick (or `forced`); the raw logits go back for the host statistics."""
        raw = logits.astype(mx.float32)[0]
        pen = repetition_penalty(raw[None], history, penalty)[0] if penalty != 1.0 else raw
        greedy = mx.argmax(pen, keepdims=True)
        token = greedy if forced is None else mx.array([forced], dtype=mx.uint32)
        return token, (greedy, mx.logsumexp(raw)), raw

    sample.n = n
    sample.host = True
    return sample


def greedy_stats(
    raw: np.ndarray, token_id: int, greedy_id: int, n: int, logz: float | None = None
) -> StepStats:
    """A greedy step's StepStats from its raw logits (float32, (V,)): `token_id` was
    chosen (the argmax `greedy_id`, unless the person forced another). `logz`: the
    device's log Z (as mlx-lm's); None computes it here in float64."""
    x = raw.astype(np.float64)
    m = x.max()
    e = np.exp(x - m)
    if logz is None:
        logz = float(np.log(e.sum()) + m)
    lp = x - logz
    p = e / e.sum()  # exact in float64 whatever log Z the log-probabilities use
    entropy = float(-(p * (x - m - np.log(e.sum()))).sum())
    k = min(max(n, 1), lp.shape[0])
    idx = np.argpartition(-lp, k - 1)[:k]
    idx = idx[np.argsort(-lp[idx], kind="stable")]
    top_ids = [int(i) for i in idx]
    top_lp = [float(v) for v in lp[idx]]
    chosen = float(lp[token_id])
    s_ids = [greedy_id, *top_ids[: k - 1]]
    s_lp = [0.0] + [NEG_INF] * (k - 1)
    logz_t, ent_t = temperature_sweep_np(lp.astype(np.float32))
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
