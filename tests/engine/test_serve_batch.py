"""Continuous batching keeps every record: four requests with different settings and
seeds decoded in one batch (one graph of statistics per step, batch_stats.py) give
the records the engine's serial path gives for each alone: the same tokens and
seeded samples, and every statistic (log-probabilities, top lists, entropies, the
sampled-from distribution, the temperature sweep) as close as a batched forward
pass allows; on the same logits, the same statistics to 1e-6."""

from __future__ import annotations

import asyncio
import math

import mlx.core as mx

from engine.backends.mlx.generate import generate_records
from engine.run.records import SWEEP_TEMPERATURES
from engine.run.settings import SamplingSettings
from engine.serve.batch_stats import normalise_rows, top_n_rows
from engine.serve.events import ClientInfo
from engine.serve.jobs import END, Job
from engine.serve.scheduler import Scheduler
from engine.serve.validation import ServeRequest

CASES = (
    ("Name a colour.", SamplingSettings(temperature=0, max_tokens=5, top_n=3)),
    ("Name a fruit.", SamplingSettings(temperature=0.9, top_p=0.9, max_tokens=5, seed=11)),
    (
        "Say hello in French.",
        SamplingSettings(temperature=0.7, top_k=20, min_p=0.05, max_tokens=5, top_n=8, seed=5),
    ),
    (
        "Name a planet.",
        SamplingSettings(temperature=1.0, repetition_penalty=1.3, max_tokens=5, top_n=4, seed=3),
    ),
)
# A batched forward pass's logits differ from a lone one's by rounding (a matrix
# product over 4 rows against a matrix-vector one): a few 1e-6, up to ~1e-5 on
# log-probabilities (the statistics themselves are exact: test_same_logits_same_stats).
TOL = 1e-4
CLIENT = ClientInfo("127.0.0.1:1", "test", "/v1/chat/completions")


def _request(prompt: str, settings: SamplingSettings) -> ServeRequest:
    msgs = [{"role": "user", "content": prompt}]
    return ServeRequest(True, None, msgs, settings, True, True, 0, False)


async def _batched(lm) -> list[list]:
    """The four requests queued before the model thread starts: one batch of four."""
    scheduler = Scheduler(lm, {}, None, max_batch=4, max_queue=4)
    jobs = [Job(_request(p, s), f"r{i}", CLIENT) for i, (p, s) in enumerate(CASES)]
    for job in jobs:
        scheduler.submit(job)
    scheduler.start()
    out = []
    try:
        for job in jobs:
            records = []
            while (item := await asyncio.wait_for(job.queue.get(), 120)) is not END:
                records.append(item)
            out.append(records)
    finally:
        scheduler.stop()
    return out


def _close(a, b) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, abs_tol=TOL)


def test_batched_records_equal_serial_records(smollm):
    batched = asyncio.run(_batched(smollm))
    for (prompt, settings), records in zip(CASES, batched, strict=True):
        msgs = [{"role": "user", "content": prompt}]
        serial = [r for r in generate_records(smollm, msgs, settings) if r.type == "token"]
        got = [r for r in records if getattr(r, "type", None) == "token"]
        assert records[-1].type == "done" and records[-1].finish_reason == "length"
        assert [t.token_id for t in got] == [t.token_id for t in serial], settings
        for a, b in zip(got, serial, strict=True):
            assert a.text == b.text
            for field in ("logprob", "sampled_logprob", "entropy", "sampled_entropy"):
                assert _close(getattr(a, field), getattr(b, field)), field
            for field in ("top", "sampled_top"):
                ours, theirs = getattr(a, field), getattr(b, field)
                assert [c.token_id for c in ours] == [c.token_id for c in theirs], field
                for c, d in zip(ours, theirs, strict=True):
                    assert _close(c.logprob, d.logprob), (field, c.logprob, d.logprob)
            assert len(a.top) == settings.top_n
            assert all(_close(x, y) for x, y in zip(a.sampled_probs, b.sampled_probs, strict=True))
            # log Z(T) and H(T) divide the logits by T: the few 1e-6 by which a batched
            # forward pass's logits differ from a lone one's grow by 1/T
            for field in ("sweep_logz", "sweep_entropy"):
                ours, theirs = getattr(a, field), getattr(b, field)
                assert len(ours) == len(theirs) == len(SWEEP_TEMPERATURES), field
                for t, x, y in zip(SWEEP_TEMPERATURES, ours, theirs, strict=True):
                    assert math.isclose(x, y, abs_tol=TOL / t), (field, t, x, y)


def test_row_statistics_against_numpy_float64():
    import numpy as np

    x = mx.random.normal((3, 1000), key=mx.random.key(7)) * 4  # (B, V)
    lp, ent = normalise_rows(x)
    ids, vals = top_n_rows(lp, 5)
    ref = np.array(x, dtype=np.float64)
    ref_lp = ref - np.log(np.exp(ref - ref.max(1, keepdims=True)).sum(1, keepdims=True))
    ref_lp -= ref.max(1, keepdims=True)
    p = np.exp(ref_lp)
    assert np.allclose(np.array(lp), ref_lp, atol=1e-5)
    assert np.allclose(np.array(ent), -(p * ref_lp).sum(1), atol=1e-5)
    order = np.argsort(-ref_lp, axis=1)[:, :5]
    assert np.array(ids).tolist() == order.tolist()
    assert np.allclose(np.array(vals), np.take_along_axis(ref_lp, order, 1), atol=1e-5)


def _serial_stats(settings, logits, history, vocab):
    """One step of the engine's serial CPU sampler on (1, V) logits (host_stats.py for
    greedy, instrument.py and the NumPy sweep otherwise)."""
    import dataclasses

    import numpy as np

    from engine.backends.mlx.host_stats import greedy_sampler, greedy_stats
    from engine.backends.mlx.host_sweep import temperature_sweep_np
    from engine.backends.mlx.instrument import make_step_sampler, unpack

    if settings.temperature == 0:
        token, greedy, lp = greedy_sampler(settings, vocab)(logits, history)
        mx.eval(token, greedy, lp)
        stats = greedy_stats(np.array(lp), token.item(), greedy.item(), min(settings.top_n, vocab))
        return token, stats
    step = make_step_sampler(settings, vocab, sweep_on_device=False)
    token, packed, raw = step(logits, history)
    mx.eval(token, packed, raw)
    logz, ent = temperature_sweep_np(np.array(raw))
    stats = unpack(packed.tolist(), step.n)
    return token, dataclasses.replace(stats, sweep_logz=logz, sweep_entropy=ent)


def test_same_logits_same_stats():
    """Given the same logits, a batch step's rows are the serial sampler's steps: the
    same tokens (seeded draws included, three steps running) and statistics to 1e-6."""
    import dataclasses

    from engine.serve.batch_stats import RowSampler, StepBatch, batch_step

    vocab = 2000
    greedy_penalised = SamplingSettings(temperature=0, repetition_penalty=1.5, top_n=6)
    cases = (*CASES, ("", greedy_penalised))
    prompt = mx.array([5, 17, 17, 40])
    rows = [RowSampler(s, vocab, mx.random.key(s.seed or 0), prompt) for _p, s in cases]
    serial_hist = [prompt if s.repetition_penalty != 1.0 else None for _p, s in cases]
    seeds = [s.seed or 0 for _p, s in cases]  # each serial run's generator, as a seed
    for step_no in range(3):
        logits = mx.random.normal((len(cases), vocab), key=mx.random.key(step_no)) * 3  # (B, V)
        for i, r in enumerate(rows):
            r.keep_logits(None, logits[i : i + 1])
        lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
        tokens, packed, raw = batch_step(rows, lp)
        for r, i in ((r, i) for i, r in enumerate(rows) if r.history is not None):
            r.history = mx.concatenate([r.history, tokens[i : i + 1]])
        greedy = [r.temp == 0 for r in rows]
        batch = StepBatch(packed, raw, [r.n for r in rows], greedy)
        for i, (_p, s) in enumerate(cases):
            mx.random.seed(seeds[i])
            token, want = _serial_stats(s, logits[i : i + 1], serial_hist[i], vocab)
            seeds[i] = _state_seed()
            if serial_hist[i] is not None:
                serial_hist[i] = mx.concatenate([serial_hist[i], token])
            got = batch.stats(i)
            assert got.token_id == want.token_id == tokens[i].item(), (step_no, i)
            for f in dataclasses.fields(want):
                a, b = getattr(got, f.name), getattr(want, f.name)
                a, b = (a, b) if isinstance(a, list) else ([a], [b])
                assert len(a) == len(b), f.name
                # the sweep divides by T: a float32 rounding of the row's log Z grows by 1/T
                scale = SWEEP_TEMPERATURES if f.name.startswith("sweep") else [1.0] * len(a)
                for t, x, y in zip(scale, a, b, strict=True):
                    assert _close6(x, y, 1e-6 / t), (f.name, step_no, i, t, x, y)


def _state_seed() -> int:
    k0, k1 = mx.random.state[0].tolist()
    return (k0 << 32) | k1


def _close6(a, b, tol: float = 1e-6) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, abs_tol=tol)
