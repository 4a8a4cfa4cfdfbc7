"""Inside the model: attention weights and the logit lens, for any mlx-lm model.

One forward pass over a token sequence, captured (capture.py: for the pass only)
in two ways that work for every architecture mlx-lm ships, without copying any
model's code:

- every attention call's queries and keys (after the model's own projections,
  norms and RoPE), scale and mask; the weights are recomputed from them
  (grouped-query heads repeated, the model's mask applied, softmax in float32);
- every transformer block's output (the residual stream); the lens applies the
  model's final norm and output projection to it.

`Inspection` caches one pass per token sequence (a step of a run is the prompt
plus the tokens before it); the engine asks it for a layer, a head, a step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np

from engine.backends.mlx.capture import capture
from engine.backends.mlx.host_sweep import top_indices
from engine.errors import SettingsError

MAX_POSITIONS = 1024  # an inspection covers at most this many tokens (the last ones)


@dataclass
class Pass:
    """What one forward pass over `ids` left behind."""

    ids: list[int]
    queries: list[mx.array] = field(default_factory=list)  # per layer (1, H, T, D)
    keys: list[mx.array] = field(default_factory=list)  # per layer (1, KV, T, D)
    scales: list[float] = field(default_factory=list)
    masks: list[object] = field(default_factory=list)  # "causal", an array, or None
    hidden: list[mx.array] = field(default_factory=list)  # per layer output (1, T, D)
    logits: mx.array | None = None  # the model's own (T, V)


def run_pass(model, ids: list[int]) -> Pass:
    """One forward pass over `ids` with both captures (no KV cache)."""
    with capture(model, attention=True, hidden=True) as seen:
        logits = model(mx.array(ids)[None])
    p = Pass(
        ids=list(ids),
        queries=seen.queries,
        keys=seen.keys,
        scales=seen.scales,
        masks=seen.masks,
        hidden=seen.hidden,
        logits=logits[0].astype(mx.float32),
    )
    mx.eval(p.logits, *p.queries, *p.keys, *p.hidden)
    return p


def attention_weights(p: Pass, layer: int, last_only: bool = False) -> np.ndarray:
    """Attention weights of `layer`: (heads, T, T) float32, rows summing to 1; with
    `last_only`, the last query's row alone, (heads, 1, T)."""
    if not 0 <= layer < len(p.queries):
        raise SettingsError(f"layer {layer} does not exist: the model has {len(p.queries)}")
    q = p.queries[layer][0].astype(mx.float32)  # (H, T, D)
    if last_only:
        q = q[:, -1:, :]  # (H, 1, D)
    k = p.keys[layer][0].astype(mx.float32)  # (KV, T, D)
    heads, kv = q.shape[0], k.shape[0]
    if heads != kv:
        k = mx.repeat(k, heads // kv, axis=0)
    scores = (q * p.scales[layer]) @ k.transpose(0, 2, 1)  # (H, T, T)
    t_q, t_k = scores.shape[-2:]
    mask = p.masks[layer]
    causal = mx.arange(t_k)[None, :] <= (mx.arange(t_q)[:, None] + t_k - t_q)
    if isinstance(mask, mx.array):
        mask = mask.reshape(mask.shape[-2:])[-t_q:]  # the rows of the queries kept
        if mask.dtype == mx.bool_:
            causal = causal & mask
        else:
            scores = scores + mask.astype(mx.float32)
    scores = mx.where(causal, scores, -mx.inf)
    return np.array(mx.softmax(scores, axis=-1))


def _project(model, h: mx.array) -> mx.array:
    """The model's final norm and vocabulary projection applied to a residual."""
    inner = model.model if hasattr(model, "model") else model
    x = inner.norm(h)
    if getattr(model, "lm_head", None) is not None and not getattr(
        model, "tie_word_embeddings", False
    ):
        out = model.lm_head(x)
    else:
        out = inner.embed_tokens.as_linear(x)
    cap = getattr(getattr(model, "args", None), "final_logit_softcapping", None)
    return mx.tanh(out / cap) * cap if cap else out


def logit_lens(model, p: Pass, position: int, top_k: int = 5, chosen: int | None = None):
    """Each layer's prediction at `position`: top-k tokens with probabilities, and
    the chosen token's probability and rank.

    Returns:
        list (one per layer) of {"top": [(id, prob)], "chosen_prob", "chosen_rank"}
    """
    rows = []
    stack = mx.stack([h[0, position] for h in p.hidden])  # (L, D)
    logits = _project(model, stack[:, None, :])[:, 0, :].astype(mx.float32)
    probs = mx.softmax(logits, axis=-1)
    mx.eval(probs)
    probs = np.array(probs)
    for row in probs:
        top = top_indices(row, top_k)  # largest first, no sort of the whole vocabulary
        entry = {"top": [(int(i), float(row[i])) for i in top]}
        if chosen is not None:
            entry["chosen_prob"] = float(row[chosen])
            entry["chosen_rank"] = int((row > row[chosen]).sum()) + 1
        rows.append(entry)
    return rows


class Inspection:
    """Forward passes cached per token sequence (the last few), for one model."""

    def __init__(self, model, keep: int = 4):
        self.model, self.keep = model, keep
        self._passes: dict[tuple[int, ...], Pass] = {}

    def get(self, ids: list[int]) -> Pass:
        """The forward pass over `ids` (its last MAX_POSITIONS), run once and cached."""
        ids = list(ids)[-MAX_POSITIONS:]
        key = tuple(ids)
        if key not in self._passes:
            while len(self._passes) >= self.keep:
                self._passes.pop(next(iter(self._passes)))
            self._passes[key] = run_pass(self.model, ids)
        return self._passes[key]
