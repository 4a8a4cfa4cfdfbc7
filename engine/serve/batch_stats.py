"""One batch step's sampling and statistics in one MLX graph, read back once.

mlx-lm's BatchGenerator calls a sampler once per step with the whole batch's
(B, V) log-probabilities when every request shares that sampler object, so
`BatchSampler` is that one object: it finds which request each row belongs to
(the calling GenerationBatch's `uids`), then builds, for all rows at once, what
the engine's per-request step sampler (instrument.py) builds for one: the raw
distribution's log-softmax and entropy, the top-n (argpartition over the rows),
the greedy pick, and per sampled row its own filters (top-p, min-p, top-k with
its own values, mlx-lm's functions as the serial path applies them), its own
temperature and its own seeded key. Everything lands in one (B, P) float32 array
(instrument.unpack's layout, at the batch's largest n) plus the (B, V) raw
log-probabilities; both are queued with the step's tokens, and the host reads
them once per step (`StepBatch.stats`), where NumPy computes each row's
temperature sweep as the serial CPU path does (host_sweep.py).

A request with a repetition penalty keeps its own logits row (a logits processor
BatchGenerator calls before it normalises): the penalty is sign-aware, so it needs
the logits, not the log-probabilities.
"""

from __future__ import annotations

import dataclasses
import math
import sys

import mlx.core as mx
import numpy as np

from engine.backends.mlx.host_sweep import temperature_sweep_np
from engine.backends.mlx.instrument import (
    NEG_INF,
    StepStats,
    _normalise,
    make_filters,
    repetition_penalty,
    top_n,
    unpack,
)


def normalise_rows(x: mx.array) -> tuple[mx.array, mx.array]:
    """Row-wise log_softmax of (R, V) and each row's entropy in nats: (R, V), (R,)."""
    shifted = x - mx.max(x, axis=-1, keepdims=True)
    e = mx.exp(shifted)
    z = mx.sum(e, axis=-1, keepdims=True)  # (R, 1)
    logz = mx.log(z)
    ent = logz[:, 0] - mx.sum(mx.where(e > 0, e * shifted, 0.0), axis=-1) / z[:, 0]
    return shifted - logz, ent


def top_n_rows(x: mx.array, n: int) -> tuple[mx.array, mx.array]:
    """Indices and values of each row's n largest entries, largest first: (R, n) each."""
    idx = mx.argpartition(-x, kth=n - 1, axis=-1)[:, :n]  # (R, n)
    vals = mx.take_along_axis(x, idx, axis=-1)
    order = mx.argsort(-vals, axis=-1)
    return mx.take_along_axis(idx, order, axis=-1), mx.take_along_axis(vals, order, axis=-1)


def _pack(token, chosen, chosen_s, raw_h, samp_h, top_ids, top_lp, s_ids, s_lp, top_s):
    """(R, 5 + 5n) float32 rows in instrument.unpack's layout."""
    head = mx.stack([token.astype(mx.float32), chosen, chosen_s, raw_h, samp_h], axis=1)
    f = mx.float32
    return mx.concatenate([head, top_ids.astype(f), top_lp, s_ids.astype(f), s_lp, top_s], axis=1)


class RowSampler:
    """One request's sampling settings and state, as a row of the batch.

    Args:
        settings: the request's SamplingSettings.
        vocab_size: the model's vocabulary size.
        key: its random key (mx.random.key(seed)); each draw splits it as the
            engine's global generator does, so it draws what a serial run draws.
        history: the prompt's ids (an mx.array) when a repetition penalty is on.
    """

    def __init__(self, settings, vocab_size: int, key: mx.array, history: mx.array | None):
        self.temp = settings.temperature
        self.penalty = settings.repetition_penalty
        self.n = min(settings.top_n, vocab_size - 1)
        self.filters = make_filters(settings)
        if settings.top_k >= vocab_size:
            self.filters = self.filters[:-1]  # top-k is last; a k this large filters nothing
        self.key = key
        self.history = history if self.penalty != 1.0 else None
        self.logits: mx.array | None = None  # this step's logits row (penalty only)

    def keep_logits(self, _context, logits: mx.array) -> mx.array:
        """BatchGenerator's logits processor: remember the row, change nothing."""
        self.logits = logits
        return logits

    def draw_key(self) -> mx.array:
        """The key of this draw (the global generator's split), advancing the state."""
        state, sub = mx.random.split(self.key)
        self.key = state
        return sub


def batch_step(rows: list[RowSampler], logprobs: mx.array):
    """Sample every row and pack its statistics.

    Args:
        rows: the requests, in the batch's row order.
        logprobs: (B, V) log-probabilities from BatchGenerator.

    Returns:
        tokens (B,) uint32, packed (B, 5 + 5n) float32, raw (B, V) float32 log-probs.
    """
    n = max(r.n for r in rows)
    x = logprobs.astype(mx.float32)  # (B, V): logits - logsumexp, as mlx-lm's greedy step
    sampled = [i for i, r in enumerate(rows) if r.temp != 0]
    if sampled:  # a sampled row's raw distribution as the serial sampler normalises it
        norm, raw_h = normalise_rows(x)  # (B, V), (B,)
        greedy_row = mx.array([r.temp == 0 for r in rows])[:, None]
        raw = mx.where(greedy_row, x, norm)
    else:  # all greedy: each row's entropy in float64 on the host (StepBatch)
        raw, raw_h = x, mx.zeros((len(rows),))
    top_ids, top_lp = top_n_rows(raw, n)  # (B, n)
    pen = raw
    if any(r.penalty != 1.0 for r in rows):
        pen = mx.stack([_penalised(r, raw[i]) for i, r in enumerate(rows)])
    greedy = mx.argmax(pen, axis=-1)  # (B,)
    if not sampled:
        return greedy, _greedy_pack(greedy, raw, raw_h, top_ids, top_lp), raw
    parts, tokens = [], []
    for i, r in enumerate(rows):
        if r.temp == 0:
            g = greedy[i : i + 1]
            parts.append(
                _greedy_pack(g, raw[i : i + 1], raw_h[i : i + 1], *_at(i, top_ids, top_lp))
            )
            tokens.append(g.astype(mx.uint32))
        else:
            token, packed = _sampled_row(r, raw[i], raw_h[i], pen[i], top_ids[i], top_lp[i], n)
            parts.append(packed)
            tokens.append(token.astype(mx.uint32))
    return mx.concatenate(tokens), mx.concatenate(parts), raw


def _at(i: int, *arrays):
    return [a[i : i + 1] for a in arrays]


def _penalised(r: RowSampler, raw_row: mx.array) -> mx.array:
    """The row the sampler picks from: the penalised logits, normalised (V,)."""
    if r.penalty == 1.0:
        return raw_row
    logits = r.logits.astype(mx.float32)  # (1, V): kept by keep_logits this step
    pen, _ = _normalise(repetition_penalty(logits, r.history, r.penalty)[0])
    return pen


def _greedy_pack(greedy, raw, raw_h, top_ids, top_lp):
    """Rows drawn at T = 0: the sampled-from distribution is one-hot on the argmax."""
    rows, n = top_ids.shape
    chosen = mx.take_along_axis(raw, greedy[:, None], axis=-1)[:, 0]  # (R,)
    zeros = mx.zeros((rows,))
    s_ids = mx.concatenate([greedy[:, None].astype(top_ids.dtype), top_ids[:, : n - 1]], axis=1)
    s_lp = mx.broadcast_to(
        mx.concatenate([mx.zeros((1,)), mx.full((n - 1,), NEG_INF)])[None], (rows, n)
    )
    top_s = (top_ids == greedy[:, None]).astype(mx.float32)
    return _pack(greedy, chosen, zeros, raw_h, zeros, top_ids, top_lp, s_ids, s_lp, top_s)


def _sampled_row(r: RowSampler, raw, raw_h, pen, top_ids, top_lp, n: int):
    """One row drawn at T > 0 with its own filters and key: (token (1,), packed (1, P))."""
    masked = pen[None]  # (1, V)
    for f in r.filters:
        masked = f(masked)
    scaled = masked / r.temp
    token = mx.random.categorical(scaled, key=r.draw_key())  # (1,)
    dist, samp_h = _normalise(scaled[0])  # (V,), ()
    if r.penalty != 1.0:  # the penalty changes the ranking
        s_ids, s_lp = top_n(dist, n)
    else:  # temperature and masks keep the raw ranking
        s_ids, s_lp = top_ids, dist[top_ids]
    one = [
        token,
        raw[token],
        dist[token],
        raw_h[None],
        samp_h[None],
        top_ids[None],
        top_lp[None],
        s_ids[None],
        s_lp[None],
        mx.exp(dist[top_ids])[None],
    ]
    return token, _pack(*one)


class StepBatch:
    """One step's queued results; read back to the host once, on first use."""

    def __init__(self, packed: mx.array, raw: mx.array, ns: list[int], greedy: list[bool]):
        self.packed, self.raw, self.ns, self.greedy = packed, raw, ns, greedy
        self._stats: list[StepStats] | None = None

    def stats(self, row: int) -> StepStats:
        """Row `row`'s StepStats (the temperature sweep included)."""
        if self._stats is None:
            width = (self.packed.shape[1] - 5) // 5
            values = self.packed.tolist()  # the one transfer of the step's small results
            raw = np.array(self.raw, copy=False)  # (B, V)
            self._stats = [
                _row(values[i], width, self.ns[i], raw[i], self.greedy[i])
                for i in range(len(values))
            ]
            self.packed = self.raw = None
        return self._stats[row]


def _row(values: list[float], width: int, n: int, raw: np.ndarray, greedy: bool) -> StepStats:
    """A row's StepStats: its top lists cut to its own n, its sweep by NumPy and, for a
    greedy row, its entropy in float64 (both as the serial CPU path computes them)."""
    s = unpack(values, width)
    logz, ent = temperature_sweep_np(raw)
    return dataclasses.replace(
        s,
        entropy=entropy64(raw) if greedy else s.entropy,
        top_ids=s.top_ids[:n],
        top_logprobs=s.top_logprobs[:n],
        sampled_top_ids=s.sampled_top_ids[:n],
        sampled_top_logprobs=s.sampled_top_logprobs[:n],
        sampled_probs=s.sampled_probs[:n],
        sweep_logz=logz,
        sweep_entropy=ent,
    )


def entropy64(raw: np.ndarray) -> float:
    """Entropy (nats) of a (V,) float32 log-probability row as host_stats.greedy_stats
    computes it: exp in float32, the sums in float64."""
    shifted = raw - raw.max()
    e = np.exp(shifted)
    z = float(e.sum(dtype=np.float64))
    with np.errstate(invalid="ignore"):
        terms = e * shifted
    acc = float(terms.sum(dtype=np.float64))
    if math.isnan(acc):  # a -inf entry: its term is 0 * -inf, which adds nothing
        acc = float(np.nansum(terms, dtype=np.float64))
    return math.log(z) - acc / z


class BatchSampler:
    """The sampler every request of a BatchGenerator shares (so it gets whole batches).

    Args:
        rows: uid -> RowSampler, filled by the caller as requests are inserted.
        on_step: called with (uids, tokens (B,), StepBatch) after each step is built.
    """

    def __init__(self, rows: dict, on_step):
        self.rows, self.on_step = rows, on_step

    def __call__(self, logprobs: mx.array) -> mx.array:
        uids = _calling_batch_uids(logprobs.shape[0])
        rows = [self.rows[u] for u in uids]
        tokens, packed, raw = batch_step(rows, logprobs)
        for r, i in ((r, i) for i, r in enumerate(rows) if r.history is not None):
            r.history = mx.concatenate([r.history, tokens[i : i + 1]])
        mx.async_eval(tokens, packed, raw)
        ns, greedy = [r.n for r in rows], [r.temp == 0 for r in rows]
        self.on_step(uids, tokens, StepBatch(packed, raw, ns, greedy))
        return tokens


def _calling_batch_uids(size: int) -> list[int]:
    """The uids of the mlx-lm GenerationBatch whose `_step` called the sampler, in row
    order (mlx-lm passes only the log-probabilities)."""
    batch = sys._getframe(2).f_locals.get("self")
    uids = getattr(batch, "uids", None)
    if uids is None or len(uids) != size:
        raise RuntimeError("batch_stats: this mlx-lm's BatchGenerator calls samplers unexpectedly")
    return list(uids)
