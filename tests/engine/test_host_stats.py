"""A greedy CPU step's statistics computed later on the host (NumPy, a helper
thread) equal the device sampler's eager ones: log-probabilities, entropy, top
candidates, the one-hot sampled-from distribution and the temperature sweep (exact
on the device, binned on the host within 2e-4); with a repetition penalty and a
forced token too. Then a whole greedy run through the engine equals its teacher-
forced numbers (tests/engine/test_true_numbers.py covers the rest)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.host_stats import greedy_sampler, greedy_stats
from engine.backends.mlx.instrument import make_step_sampler, unpack
from engine.run.settings import SamplingSettings

V = 49152


@pytest.mark.parametrize("penalty", [1.0, 1.3])
@pytest.mark.parametrize("forced", [None, 7])
def test_host_stats_equal_the_device_samplers(penalty, forced):
    rng = np.random.default_rng(3)
    logits = mx.array((rng.standard_normal(V) * 3).astype(np.float32))[None]
    history = mx.array([5, 9, 11, 7], dtype=mx.uint32)
    s = SamplingSettings(temperature=0, repetition_penalty=penalty, top_n=10)
    eager = make_step_sampler(s, V, sweep_on_device=True)
    token, packed, _raw = eager(logits, history if penalty != 1 else None, forced)
    mx.eval(token, packed)
    want = unpack(packed.tolist(), eager.n)
    lazy = greedy_sampler(s, V)
    token2, greedy, raw = lazy(logits, history if penalty != 1 else None, forced)
    mx.eval(token2, greedy, raw)
    got = greedy_stats(np.array(raw), int(token2.item()), int(greedy.item()), lazy.n)
    bare = logits - mx.logsumexp(logits, axis=-1, keepdims=True)  # mlx-lm's own step
    assert got.logprob == pytest.approx(bare[0, got.token_id].item(), abs=1e-6)
    assert got.token_id == want.token_id == int(token.item())
    # Against float64 (the device's float32 log Z differs by ~5e-5).
    x = np.array(logits[0], dtype=np.float64)
    lp = x - x.max() - np.log(np.exp(x - x.max()).sum())
    assert got.logprob == pytest.approx(lp[got.token_id], abs=1e-4)
    assert got.entropy == pytest.approx(float(-(np.exp(lp) * lp).sum()), abs=1e-6)
    assert got.logprob == pytest.approx(want.logprob, abs=1e-4)
    assert got.entropy == pytest.approx(want.entropy, abs=1e-4)
    assert got.top_ids == want.top_ids
    np.testing.assert_allclose(got.top_logprobs, want.top_logprobs, atol=1e-4)
    assert got.sampled_logprob == want.sampled_logprob  # 0, or -inf for a forced token
    assert got.sampled_top_ids[0] == want.sampled_top_ids[0]
    assert got.sampled_probs == want.sampled_probs
    # The sweep against float64 over the whole vocabulary, from the log-probabilities
    # the record holds (the host's binned tail stays within 2e-4).
    from engine.run.records import SWEEP_TEMPERATURES

    t = np.array(SWEEP_TEMPERATURES)[:, None]
    scaled = np.array(raw, dtype=np.float64)[None, :] / t  # the record's log-probabilities
    peak = scaled.max(axis=1, keepdims=True)
    logz = np.log(np.exp(scaled - peak).sum(axis=1)) + peak[:, 0]
    ent = logz - (np.exp(scaled - logz[:, None]) * scaled).sum(axis=1)
    np.testing.assert_allclose(got.sweep_logz, logz, atol=2e-4)
    np.testing.assert_allclose(got.sweep_entropy, ent, atol=2e-4)
    np.testing.assert_allclose(got.sweep_logz, want.sweep_logz, atol=1e-3)
