"""The host's top-candidate search and binned temperature sweep (host_sweep.py)
against plain NumPy in float64: ties, masked (-inf) entries, a wide distribution
(as a random-weight model's) and a peaked one (as a trained model's)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.mlx.host_sweep import sweep_from_head, temperature_sweep_np, top_indices
from engine.run.records import SWEEP_TEMPERATURES

V = 49152


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x[np.isfinite(x)].max()
    return x - m - np.log(np.exp(x - m).sum())


def _vectors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    peaked = _log_softmax(rng.standard_normal(V) * 4)
    flat = _log_softmax(rng.standard_normal(V) * 0.7)  # a wide head (as a random model's)
    ties = _log_softmax(np.round(rng.standard_normal(V), 1))  # many equal values
    masked = peaked.copy()
    masked[rng.choice(V, 5000, replace=False)] = -np.inf
    return {
        name: v.astype(np.float32)
        for name, v in {"peaked": peaked, "flat": flat, "ties": ties, "masked": masked}.items()
    }


@pytest.mark.parametrize("name", ["peaked", "flat", "ties", "masked"])
@pytest.mark.parametrize("m", [1, 10, 64, 300])
def test_top_indices_equal_a_stable_sort(name, m):
    v = _vectors()[name]
    want = np.argsort(-v.astype(np.float64), kind="stable")[:m]
    assert top_indices(v, m).tolist() == want.tolist()


def test_top_indices_when_fewer_are_finite_than_asked():
    v = np.full(100, -np.inf, dtype=np.float32)
    v[[3, 50, 7]] = [-1.0, -2.0, -0.5]
    assert top_indices(v, 64)[:3].tolist() == [7, 3, 50]
    assert len(top_indices(v, 64)) == 64


@pytest.mark.parametrize("name", ["peaked", "flat", "ties", "masked"])
def test_sweep_equals_the_full_float64_sweep(name):
    v = _vectors()[name]
    t = np.array(SWEEP_TEMPERATURES)[:, None]
    x = v.astype(np.float64)[None, np.isfinite(v)] / t
    peak = x.max(axis=1, keepdims=True)
    logz = np.log(np.exp(x - peak).sum(axis=1)) + peak[:, 0]
    ent = logz - (np.exp(x - logz[:, None]) * x).sum(axis=1)
    got_z, got_h = temperature_sweep_np(v)
    np.testing.assert_allclose(got_z, logz, atol=2e-4)
    np.testing.assert_allclose(got_h, ent, atol=2e-4)
    assert np.isfinite(got_h).all()
    # The head found once serves the sweep: the same numbers as a fresh search.
    assert sweep_from_head(v, top_indices(v, 64)) == (got_z, got_h)
