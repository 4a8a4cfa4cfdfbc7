"""The decode loop: one sampled step at a time, stamped when its value is known.

On a GPU, and on the CPU where steps are fast (under LOOKAHEAD_BELOW_S), the next
step is queued (`mx.async_eval`) before the current one is read, as mlx-lm's
generate_step does, so the current token's record overlaps the model's work. MLX's
CPU build computes a queued step on its own thread, but `async_eval` returns only
once all but the last few operations in flight are done: there a fast step's stamp
can come up to one (fast) step late, while the first two steps and the last are
always stamped when read, so TTFT and the decode rate (first to last token) stay
exact. Where CPU steps are slow (a real model, ~100 ms) the next step's graph is
built while the current one computes but queued only once the current record went
out, so no token is stamped or shown a step late. A run that ends takes back the
step built past its last token (`step.undo`): the KV cache holds what a
one-step-at-a-time run would (generate.py settles a never-queued step's lazy
arrays after the run's last record).

On a GPU the temperature sweep is part of each step's graph. On the CPU a pass over
the vocabulary costs about as much as a small model's step, so there the statistics
(host_stats.py, host_sweep.py) are computed by NumPy on a helper thread while the
next step runs, and each step is handed on once its statistics are in: the engine's
per-token bookkeeping stays off the critical path, and every number is the same as
computed inline.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import Future, ThreadPoolExecutor

import mlx.core as mx
import numpy as np

from engine.backends.mlx.host_stats import greedy_stats
from engine.backends.mlx.host_sweep import temperature_sweep_np
from engine.backends.mlx.instrument import unpack

_SWEEPER: ThreadPoolExecutor | None = None
LOOKAHEAD_BELOW_S = 0.02  # steps faster than this hand a token on one step later


def sweeper() -> ThreadPoolExecutor:
    """The one helper thread that computes CPU sweeps (made on first use)."""
    global _SWEEPER
    if _SWEEPER is None:
        _SWEEPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep")
    return _SWEEPER


def decode_steps(step, first_input: mx.array, max_steps: int, on_device: bool):
    """Run up to `max_steps` sampling steps; the caller stops early by closing.

    `step.host`: a greedy CPU sampler (host_stats.py) whose statistics NumPy computes
    on the helper thread; else, on the CPU, just the temperature sweep goes there.

    Yields:
        (token id, perf_counter time at which the step's values were known, its
        StepStats or a Future of them).
    """
    host = getattr(step, "host", False)
    y, out = step(first_input)
    mx.async_eval(y, *_leaves(out))
    last_t, fast = None, False
    for i in range(max_steps):
        more = i + 1 < max_steps
        queued = more and (fast or on_device)
        if more:  # build the next step's graph while this one computes
            next_y, next_out = step(y)
            if queued:  # and queue it, as mlx-lm does
                mx.async_eval(next_y, *_leaves(next_out))
        y.item()  # this step's values are known (`out` was queued with it)
        t_known = time.perf_counter()
        fast = last_t is not None and t_known - last_t < LOOKAHEAD_BELOW_S
        last_t = t_known
        if host:
            greedy, raw = out
            token_id = int(y.item())
            stats = sweeper().submit(
                greedy_stats, np.array(raw, copy=False), token_id, int(greedy.item()), step.n
            )
        else:
            packed, raw = out
            stats = unpack(packed.tolist(), step.n)
            token_id = stats.token_id
            if not on_device:
                stats = sweeper().submit(_with_sweep, stats, np.array(raw, copy=False))
        try:
            yield token_id, t_known, stats
        except GeneratorExit:  # the run ended here: the step built after it never counts
            if more:
                step.undo()
            raise
        if not more:
            return
        if not queued:  # slow steps: queued once the record went out
            mx.async_eval(next_y, *_leaves(next_out))
        y, out = next_y, next_out


def _leaves(out) -> list:
    """The arrays of a step's output (nested tuples), to evaluate together."""
    if isinstance(out, tuple | list):
        return [a for part in out for a in _leaves(part)]
    return [out]


def _with_sweep(stats, raw: np.ndarray):
    logz, ent = temperature_sweep_np(raw)
    return dataclasses.replace(stats, sweep_logz=logz, sweep_entropy=ent)


def with_sweeps(steps, eos: set, undo=None):
    """(StepStats, time known) for each step of `decode_steps`; a step whose
    statistics the helper thread computes is handed on once the next step has been
    computed (they ran meanwhile), except after an end-of-sequence token, which
    nothing follows, and unless steps are known to be fast (LOOKAHEAD_BELOW_S; not
    yet at the first): for a slow step the wait for the statistics is small beside
    it, and a token shows a step sooner.

    Closing this closes `steps`, then calls `undo` once for each step taken from it
    but never handed on (its token was fed to the model after the last one seen).
    """
    held, last_t, unseen = None, None, 0
    try:
        for token_id, t_known, stats in steps:
            unseen += 1
            if not isinstance(stats, Future):
                unseen -= 1
                yield stats, t_known
                continue
            if held is not None:
                unseen -= 1
                yield held[1].result(), held[0]
            held = (t_known, stats)
            fast = last_t is not None and t_known - last_t < LOOKAHEAD_BELOW_S
            last_t = t_known
            if token_id in eos or not fast:
                held, unseen = None, unseen - 1
                yield stats.result(), t_known
            if token_id in eos:
                break
        if held is not None:
            last, held, unseen = held, None, unseen - 1
            yield last[1].result(), last[0]
    finally:
        if held is not None:
            held[1].cancel()
        steps.close()
        for _ in range(unseen if undo is not None else 0):
            undo()
