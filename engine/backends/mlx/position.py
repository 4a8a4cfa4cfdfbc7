"""Attention by position: where the query token's attention goes along the context.

For the last position of a cached forward pass (inside.py), each layer's attention
row is averaged over heads (so it sums to 1), and the layers' rows are averaged.
The masses are then summed in bins along the context: the first token (the
"attention sink"), the rest of the first 10%, the middle, the last 10% (these
four partition the context and sum to 1) and, overlapping the end, the most
recent 32 tokens. Plain values only.
"""

from __future__ import annotations

import numpy as np

from engine.backends.mlx.inside import Pass, attention_weights

RECENT = 32  # tokens in the "recent" bin
EDGE = 0.10  # share of the context in the first and last bins
BINS = ("first token", "first 10%", "middle", "last 10%", f"recent {RECENT}")


def bin_edges(t: int) -> dict[str, tuple[int, int]]:
    """Half-open position ranges of each bin for a context of `t` tokens."""
    edge = max(1, round(EDGE * t))
    first_end = min(edge, t)
    last_start = max(first_end, t - edge)
    return {
        BINS[0]: (0, min(1, t)),
        BINS[1]: (min(1, t), first_end),
        BINS[2]: (first_end, last_start),
        BINS[3]: (last_start, t),
        BINS[4]: (max(0, t - RECENT), t),
    }


def bin_masses(mass: np.ndarray) -> dict[str, float]:
    """The mass of each bin (see `bin_edges`) for one row of masses."""
    return {name: float(mass[a:b].sum()) for name, (a, b) in bin_edges(len(mass)).items()}


def position_masses(p: Pass) -> np.ndarray:
    """(layers, T) float64: each layer's last-query attention, averaged over heads."""
    rows = [attention_weights(p, layer, last_only=True)[:, 0, :] for layer in range(len(p.queries))]
    return np.stack([r.astype(np.float64).mean(axis=0) for r in rows])  # (L, T)


def attention_by_position(p: Pass, n_prompt: int) -> dict:
    """Mass per position (per layer and averaged over layers) and per bin.

    Args:
        p: the pass over the context; its last position is the query.
        n_prompt: how many of the pass's tokens are the prompt (the rest: the answer).

    Returns:
        dict with mean (T,), by_layer (L, T), bins (name -> mass, mean of layers),
        bins_by_layer (L dicts), edges (name -> [start, end)), prompt_tokens.
    """
    by_layer = position_masses(p)
    mean = by_layer.mean(axis=0)  # (T,)
    return {
        "mean": mean.round(9).tolist(),
        "by_layer": by_layer.round(9).tolist(),
        "bins": bin_masses(mean),
        "bins_by_layer": [bin_masses(row) for row in by_layer],
        "edges": {k: list(v) for k, v in bin_edges(len(mean)).items()},
        "prompt_tokens": int(n_prompt),
    }
