"""One chunk of a read, reduced on the device: (L, V) logits in, (L, small) out.

For each of the chunk's L positions: the actual next token's log-probability,
its rank (1 + how many tokens have a larger logit), the entropy, the top-n
candidates and, optionally, the temperature sweep. Only these small arrays are
read back to Python; the (L, V) logits never leave MLX. The arithmetic is the
generation's (instrument.normalise, top_n, temperature_sweep) along a batch axis,
so a read token's numbers are what the same step would show when generated: on the
CPU the temperature sweep is NumPy's, from each position's log-probabilities in host
memory (host_sweep.py, as a generated step's; MLX's took 25 ms a position over
SmolLM2's vocabulary and 150 ms over Gemma 3's, most of a read's time).
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx
import numpy as np

from engine.backends.mlx.host_sweep import temperature_sweep_np
from engine.run.records import SWEEP_TEMPERATURES


@dataclass(frozen=True)
class ChunkStats:
    """A chunk's statistics as plain Python lists, one entry per position."""

    logprob: list[float]
    rank: list[int]
    entropy: list[float]
    top_ids: list[list[int]]
    top_logprobs: list[list[float]]
    sweep_logz: list[list[float]]  # empty lists without the sweep
    sweep_entropy: list[list[float]]


def reduce_chunk(logits: mx.array, targets: mx.array, n: int, sweep: bool) -> ChunkStats:
    """The statistics of one chunk.

    Args:
        logits: (L, V) the model's logits at each input position.
        targets: (L,) the token that actually follows each position.
        n: top candidates kept (at most V - 1).
        sweep: also compute the temperature sweep.

    Returns:
        ChunkStats (evaluated and copied to the host).
    """
    x = logits.astype(mx.float32)  # (L, V)
    shifted = x - mx.max(x, axis=-1, keepdims=True)  # (L, V)
    e = mx.exp(shifted)
    z = mx.sum(e, axis=-1)  # (L,)
    logz = mx.log(z)
    lp = shifted - logz[:, None]  # (L, V) log-probabilities
    ent = logz - mx.sum(mx.where(e > 0, e * shifted, 0.0), axis=-1) / z  # (L,)
    col = targets[:, None]  # (L, 1)
    chosen = mx.take_along_axis(lp, col, axis=-1)[:, 0]  # (L,)
    chosen_logit = mx.take_along_axis(x, col, axis=-1)  # (L, 1)
    rank = 1 + mx.sum(x > chosen_logit, axis=-1)  # (L,)
    idx = mx.argpartition(-lp, kth=n - 1, axis=-1)[:, :n]  # (L, n)
    vals = mx.take_along_axis(lp, idx, axis=-1)
    order = mx.argsort(-vals, axis=-1)
    top_ids = mx.take_along_axis(idx, order, axis=-1)  # (L, n)
    top_lp = mx.take_along_axis(vals, order, axis=-1)
    out = [chosen, rank, ent, top_ids, top_lp]
    on_host = sweep and mx.default_device().type == mx.DeviceType.cpu
    if sweep and not on_host:
        out.extend(_sweep(lp))
    mx.eval(out + [lp] if on_host else out)  # on the host the sweep reads lp
    logz_t, ent_t = ([a.tolist() for a in out[5:]]) if sweep and not on_host else ([], [])
    if on_host:
        rows = [temperature_sweep_np(row) for row in np.array(lp, copy=False)]  # (L, V)
        logz_t, ent_t = [z for z, _h in rows], [h for _z, h in rows]
    return ChunkStats(
        logprob=chosen.tolist(),
        rank=[int(r) for r in rank.tolist()],
        entropy=ent.tolist(),
        top_ids=top_ids.tolist(),
        top_logprobs=top_lp.tolist(),
        sweep_logz=logz_t,
        sweep_entropy=ent_t,
    )


def _sweep(lp: mx.array) -> tuple[mx.array, mx.array]:
    """log Z(T) and H(T) of softmax(lp / T) per position, (L, G) each: one (L, V)
    pass per temperature (never an (L, G, V) array)."""
    logz, ent = [], []
    for t in SWEEP_TEMPERATURES:
        scaled = lp / t  # (L, V)
        lz = mx.logsumexp(scaled, axis=-1)  # (L,)
        p = mx.exp(scaled - lz[:, None])
        logz.append(lz)
        ent.append(lz - mx.sum(p * scaled, axis=-1))
        mx.eval(logz[-1], ent[-1])  # free this temperature's (L, V) arrays now
    return mx.stack(logz, axis=-1), mx.stack(ent, axis=-1)  # (L, G)
