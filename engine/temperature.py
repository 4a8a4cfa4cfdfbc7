"""What temperature does to one step's distribution, from its record alone.

A TokenRecord carries the raw top-n log-probabilities and, at every T in
SWEEP_TEMPERATURES, log Z(T) = logsumexp(logprobs / T) and the entropy H(T).
With F(T) = T log Z(T) (a smooth max of the logprobs) we know F and its
derivative at every node: F'(T) = H(T), and F(0) = max logprob, F'(0) = 0.
Cubic Hermite interpolation of F then gives log Z at any temperature, so
p_i(T) = exp((logprob_i - F(T)) / T) is exact at the nodes and within ~1e-3
between them. NumPy only: the app redraws this on every slider move.
"""

from __future__ import annotations

import numpy as np

from engine.records import SWEEP_TEMPERATURES, TokenRecord

MIN_T = 1e-3  # below this, the distribution is treated as greedy (one-hot)


def _nodes(record: TokenRecord):
    t = np.array((0.0, *SWEEP_TEMPERATURES))
    logz = np.asarray(record.sweep_logz, dtype=np.float64)
    f = np.concatenate([[record.top[0].logprob], np.asarray(SWEEP_TEMPERATURES) * logz])
    df = np.concatenate([[0.0], np.asarray(record.sweep_entropy, dtype=np.float64)])
    return t, f, df


def free_energy(record: TokenRecord, temps) -> np.ndarray:
    """F(T) = T log Z(T) at each temperature (cubic Hermite between nodes)."""
    t, f, df = _nodes(record)
    x = np.clip(np.asarray(temps, dtype=np.float64), 0.0, t[-1])
    i = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
    h = t[i + 1] - t[i]
    s = (x - t[i]) / h
    h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
    h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
    return h00 * f[i] + h10 * h * df[i] + h01 * f[i + 1] + h11 * h * df[i + 1]


def probabilities(record: TokenRecord, temps, n: int | None = None) -> np.ndarray:
    """p_i(T) of the top-n raw candidates, shape (n, len(temps))."""
    temps = np.atleast_1d(np.asarray(temps, dtype=np.float64))
    lp = np.array([c.logprob for c in record.top[:n]], dtype=np.float64)[:, None]  # (n, 1)
    f = free_energy(record, temps)[None, :]  # (1, G)
    safe_t = np.maximum(temps, MIN_T)[None, :]
    p = np.exp(np.minimum((lp - f) / safe_t, 0.0))
    greedy = (np.arange(len(lp)) == 0).astype(np.float64)[:, None]
    return np.where(temps[None, :] < MIN_T, greedy, p)


def entropy(record: TokenRecord, temps) -> np.ndarray:
    """H(T) in nats (linear between the recorded nodes, 0 at T = 0)."""
    t = np.array((0.0, *SWEEP_TEMPERATURES))
    h = np.array((0.0, *record.sweep_entropy))
    return np.interp(np.asarray(temps, dtype=np.float64), t, h)


def has_sweep(record: TokenRecord) -> bool:
    return len(record.sweep_logz) == len(SWEEP_TEMPERATURES) and bool(record.top)
