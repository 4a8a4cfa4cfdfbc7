"""On-device instrumentation against an independent NumPy computation."""

from __future__ import annotations

import math

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.host_sweep import temperature_sweep_np
from engine.backends.mlx.instrument import (
    candidates,
    make_step_sampler,
    temperature_sweep,
    unpack,
)
from engine.run.records import SWEEP_TEMPERATURES
from engine.run.settings import SamplingSettings

V = 500


def _log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x[np.isfinite(x)].max()
    return x - (m + np.log(np.exp(x - m).sum()))


def _entropy(lp):
    p = np.exp(lp)
    return float(-(p[p > 0] * lp[p > 0]).sum())


def reference_sampled(logits, s: SamplingSettings):
    """mlx-lm's sampling distribution, written out in NumPy."""
    lp = _log_softmax(logits)
    keep = np.ones_like(lp, dtype=bool)
    if 0 < s.top_p < 1:
        order = np.argsort(-lp)
        p = np.exp(lp[order])
        before = np.cumsum(p) - p
        keep_sorted = before < s.top_p
        keep[order[~keep_sorted]] = False
    if s.min_p > 0:
        keep &= lp >= lp.max() + math.log(s.min_p)
    if s.top_k > 0:
        keep[np.argsort(-lp)[s.top_k :]] = False
    masked = np.where(keep, lp, -np.inf)
    return _log_softmax(masked / s.temperature)


def _run(logits, settings):
    sample = make_step_sampler(settings, V, sweep_on_device=True)
    token, packed, raw = sample(mx.array(logits[None].astype(np.float32)), None)
    mx.eval(token, packed, raw)
    return unpack(packed.tolist(), sample.n), np.array(raw)


@pytest.fixture
def logits():
    return np.random.default_rng(7).normal(0, 3, V)


@pytest.mark.parametrize(
    "settings",
    [
        SamplingSettings(temperature=1.0),
        SamplingSettings(temperature=0.5),
        SamplingSettings(temperature=1.7, top_p=0.8),
        SamplingSettings(temperature=0.9, top_k=7),
        SamplingSettings(temperature=1.2, min_p=0.05),
        SamplingSettings(temperature=1.3, top_p=0.9, min_p=0.02, top_k=20),
    ],
    ids=["T1", "T0.5", "top_p", "top_k", "min_p", "all"],
)
def test_sampled_distribution_is_softmax_of_filtered_logits(logits, settings):
    stats, _ = _run(logits, settings)
    ref = reference_sampled(logits, settings)
    # The chosen token comes from the kept set, with the reference's logprob.
    assert np.isfinite(ref[stats.token_id])
    assert stats.sampled_logprob == pytest.approx(ref[stats.token_id], abs=1e-4)
    for tid, lp in zip(stats.sampled_top_ids, stats.sampled_top_logprobs, strict=True):
        if np.isfinite(ref[tid]):
            assert lp == pytest.approx(ref[tid], abs=1e-4)
        else:
            assert lp == -math.inf
    assert stats.sampled_entropy == pytest.approx(_entropy(ref), abs=1e-4)


def test_raw_distribution_top_n_ordering_and_entropy(logits):
    stats, raw = _run(logits, SamplingSettings(temperature=0.8, top_n=12))
    ref = _log_softmax(logits)
    np.testing.assert_allclose(raw, ref, atol=1e-5)
    assert stats.top_ids == list(np.argsort(-ref)[:12])
    np.testing.assert_allclose(stats.top_logprobs, np.sort(ref)[::-1][:12], atol=1e-5)
    assert stats.top_logprobs == sorted(stats.top_logprobs, reverse=True)
    assert stats.entropy == pytest.approx(_entropy(ref), abs=1e-4)
    assert stats.logprob == pytest.approx(ref[stats.token_id], abs=1e-5)


def test_greedy_is_one_hot_on_argmax(logits):
    stats, _ = _run(logits, SamplingSettings(temperature=0.0))
    assert stats.token_id == int(np.argmax(logits))
    assert stats.sampled_logprob == 0.0
    assert stats.sampled_entropy == 0.0
    assert stats.sampled_top_ids[0] == stats.token_id
    assert all(lp == -math.inf for lp in stats.sampled_top_logprobs[1:])
    kept = candidates(stats.sampled_top_ids, stats.sampled_top_logprobs, lambda i: b"x")
    assert [c.token_id for c in kept] == [stats.token_id]


def test_sampler_draws_from_the_reported_distribution():
    """Empirical frequencies over many draws match the distribution it reports."""
    small = np.array([2.0, 1.5, 1.0, 0.2, -1.0, -3.0], dtype=np.float32)
    settings = SamplingSettings(temperature=0.8, top_k=4)
    sample = make_step_sampler(settings, len(small), sweep_on_device=False)
    mx.random.seed(3)
    draws = []
    for _ in range(3000):
        token, _packed, _raw = sample(mx.array(small[None]), None)
        draws.append(token.item())
    freq = np.bincount(draws, minlength=len(small)) / len(draws)
    expected = np.exp(reference_sampled(small, settings))
    assert freq[4:].sum() == 0  # top-k removed them
    np.testing.assert_allclose(freq, expected, atol=0.03)


def test_repetition_penalty_changes_sampled_not_raw(logits):
    hist = mx.array(np.argsort(-logits)[:3])  # penalise the 3 favourites
    settings = SamplingSettings(temperature=1.0, repetition_penalty=1.5)
    sample = make_step_sampler(settings, V, sweep_on_device=False)
    token, packed, raw = sample(mx.array(logits[None].astype(np.float32)), hist)
    stats = unpack(packed.tolist(), sample.n)
    pen = logits.copy()
    idx = np.argsort(-logits)[:3]
    pen[idx] = np.where(pen[idx] < 0, pen[idx] * 1.5, pen[idx] / 1.5)
    np.testing.assert_allclose(stats.top_logprobs[0], _log_softmax(logits).max(), atol=1e-5)
    ref = _log_softmax(pen)
    assert stats.sampled_top_ids == list(np.argsort(-ref)[: sample.n])
    np.testing.assert_allclose(
        stats.sampled_top_logprobs, np.sort(ref)[::-1][: sample.n], atol=1e-4
    )


def _exact_sweep(lp):
    out_z, out_h = [], []
    for t in SWEEP_TEMPERATURES:
        s = np.asarray(lp, dtype=np.float64) / t
        z = np.logaddexp.reduce(s)
        p = np.exp(s - z)
        out_z.append(z)
        out_h.append(z - (p * s).sum())
    return np.array(out_z), np.array(out_h)


@pytest.mark.parametrize("scale", [0.5, 3.0, 8.0])
def test_temperature_sweeps_match_exact_computation(scale):
    rng = np.random.default_rng(int(scale * 10))
    lp = _log_softmax(rng.normal(0, scale, 49152)).astype(np.float32)
    z_ref, h_ref = _exact_sweep(lp)
    z_np, h_np = temperature_sweep_np(lp)
    np.testing.assert_allclose(z_np, z_ref, atol=2e-4)
    np.testing.assert_allclose(h_np, h_ref, atol=2e-4)
    z_mx, h_mx = temperature_sweep(mx.array(lp))
    np.testing.assert_allclose(np.array(z_mx), z_ref, atol=2e-3)
    np.testing.assert_allclose(np.array(h_mx), h_ref, atol=2e-3)
