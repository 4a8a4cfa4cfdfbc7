"""The sampler as a funnel: each stage the engine (and mlx-lm) applies to one step's
logits, with how many tokens remain, the probability mass kept, and the chosen
token's probability and rank in that stage's renormalised distribution.

The order is mlx-lm's, which the engine's sampler (instrument.py) follows: the
repetition penalty on the logits (a logits processor), then the top-p, min-p and
top-k masks on the T=1 log-probabilities (`make_sampler` chains them in that
order), then softmax(masked / T). Temperature comes last, so the masks never see
it. Greedy (T=0) takes the argmax of the penalised log-probabilities; mlx-lm's
greedy sampler applies no mask. This module knows nothing about a run: it takes
one logits vector and the token history.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from engine.backends.mlx.instrument import named_filters, normalise, repetition_penalty
from engine.run.settings import DEFAULT_REPETITION_CONTEXT, SamplingSettings

ORDER_NOTE = (
    "mlx-lm's order: repetition penalty, then top-p, min-p and top-k on the T=1 "
    "probabilities, then temperature; temperature is applied last, not second"
)


def _log_softmax64(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max()
    return shifted - np.log(np.exp(shifted).sum())


def _stage(name: str, detail: str, kept: np.ndarray, weights: np.ndarray, base, chosen) -> dict:
    """One stage: `kept` (V,) the tokens still in, `weights` (V,) float64 log-weights of
    its distribution before renormalising, `base` the penalised T=1 log-probabilities
    (for the mass kept)."""
    w = np.where(kept, weights, -np.inf)
    p = np.exp(w - w[kept].max())
    p /= p.sum()
    out = {
        "stage": name,
        "detail": detail,
        "tokens": int(kept.sum()),
        "mass": float(np.exp(base[kept]).sum()),
        "chosen_prob": None,
        "chosen_rank": None,
    }
    if chosen is not None:
        out["chosen_prob"] = float(p[chosen])
        if kept[chosen]:
            out["chosen_rank"] = int((p > p[chosen]).sum()) + 1
    return out


def sampling_funnel(
    logits: mx.array, history: list[int], settings: SamplingSettings, chosen, vocab_size: int
) -> list[dict]:
    """The funnel of one step (see the module docstring). Which tokens each mask keeps
    is decided by the engine's own float32 masks; probabilities are float64.

    Args:
        logits: the step's logits, (V,).
        history: the token ids before this step (prompt and answer so far); the
            repetition penalty uses the last DEFAULT_REPETITION_CONTEXT of them.
        settings: the run's sampling settings.
        chosen: the token the run took at this step, or None.
        vocab_size: the model's vocabulary (a top-k this large filters nothing).

    Returns:
        list of {stage, detail, tokens, mass, chosen_prob, chosen_rank}, first to
        last; the last stage is the distribution the token was drawn from.
    """
    logits = logits.astype(mx.float32)  # (V,)
    raw = _log_softmax64(np.array(logits, dtype=np.float64))
    everything = np.ones(raw.shape, dtype=bool)
    stages = [_stage("raw", "softmax of the model's logits (T = 1)", everything, raw, raw, chosen)]
    pen, base = normalise(logits)[0], raw
    penalty = settings.repetition_penalty
    if penalty != 1.0:
        recent = sorted(set(history[-DEFAULT_REPETITION_CONTEXT:]))
        hist = mx.array(history, dtype=mx.int32) if history else None
        penalised = repetition_penalty(mx.array(logits)[None], hist, penalty)[0]
        pen, base = normalise(penalised)[0], _log_softmax64(np.array(penalised, np.float64))
        what = f"logits of the {len(recent)} distinct tokens among the last "
        what += f"{DEFAULT_REPETITION_CONTEXT} ÷ {penalty:g} (× {penalty:g} if negative)"
        stages.append(_stage("repetition penalty", what, everything, base, base, chosen))
    if settings.temperature == 0:
        kept = np.zeros(raw.shape, dtype=bool)
        kept[int(np.argmax(np.array(pen)))] = True
        why = "T = 0: the most likely token; mlx-lm applies no filter and no temperature"
        stages.append(_stage("greedy (argmax)", why, kept, base, base, chosen))
        return stages
    masked = pen[None]  # (1, V)
    kept = everything
    for name, f in named_filters(settings):
        if name == "top-k" and settings.top_k >= vocab_size:
            continue  # the engine drops it too: a k this large filters nothing
        masked = f(masked)
        kept = np.isfinite(np.array(masked[0]))
        stages.append(_stage(name, _detail(name, settings), kept, base, base, chosen))
    t = settings.temperature
    why = f"softmax(kept / {t:g}), renormalised: the distribution the token was drawn from"
    stages.append(_stage(f"temperature {t:g}", why, kept, base / t, base, chosen))
    return stages


def _detail(name: str, s: SamplingSettings) -> str:
    if name == "top-p":
        return f"the most likely tokens holding {s.top_p:g} of the probability"
    if name == "min-p":
        return f"tokens with p ≥ {s.min_p:g} × the top token's p"
    return f"the {s.top_k} most likely tokens"
