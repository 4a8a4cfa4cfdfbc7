"""What temperature does to one step's distribution, from its record alone.

A TokenRecord carries the raw top-n log-probabilities and, at every T in
SWEEP_TEMPERATURES, log Z(T) = logsumexp(logprobs / T) and the entropy H(T).
With F(T) = T log Z(T) (a smooth max of the logprobs) we know F and its
derivative at every node: F'(T) = H(T). Between nodes, cubic Hermite
interpolation of F gives log Z, so p_i(T) = exp((logprob_i - F(T)) / T), and its
derivative gives H(T). Below the first node (T < 0.1), where two close
candidates make F bend sharply, the top-n candidates are summed exactly and the
rest of the vocabulary is a correction fitted at the first node that vanishes
as T -> 0. Checked against full-vocabulary float64 sums on 200 temperatures in
(0, 2], the top two also 0-0.1 nats apart: within PROB_TOL on probabilities and
ENTROPY_TOL nats on entropy (2e-3 and 1e-2; errors of 1.4e-3 and 8.4e-3 have
been measured on the slider's grid, so tighter promises would be false). NumPy
only: the app redraws this on every slider move.
"""

from __future__ import annotations

import numpy as np

from engine.run.records import SWEEP_TEMPERATURES, TokenRecord

MIN_T = 1e-3  # below this, the distribution is treated as greedy (one-hot)
PROB_TOL = 2e-3  # the promise (README, tests): largest error on a probability
ENTROPY_TOL = 1e-2  # … and on an entropy, in nats


def _nodes(record: TokenRecord):
    t = np.array((0.0, *SWEEP_TEMPERATURES))
    logz = np.asarray(record.sweep_logz, dtype=np.float64)
    f = np.concatenate([[record.top[0].logprob], np.asarray(SWEEP_TEMPERATURES) * logz])
    df = np.concatenate([[0.0], np.asarray(record.sweep_entropy, dtype=np.float64)])
    return t, f, df


def _low_t(record: TokenRecord, temps: np.ndarray):
    """(log Z, H) below the first node: exact over the top-n, plus the rest of the
    vocabulary as a correction r(T) = r(T1)^(T1/T) that is exact at T1 and -> 0."""
    t1 = SWEEP_TEMPERATURES[0]
    top = np.array([c.logprob for c in record.top], dtype=np.float64)  # (n,)
    t = np.maximum(temps, MIN_T)[:, None]  # (G, 1)

    def top_stats(tt):
        """(logsumexp, entropy) of the top candidates at each temperature of `tt`."""
        s = top[None, :] / tt  # (G, n)
        logz = np.logaddexp.reduce(s, axis=1)
        p = np.exp(s - logz[:, None])
        return logz, logz - (p * s).sum(axis=1)

    z1_top, h1_top = top_stats(np.array([[t1]]))
    r1 = max(float(np.expm1(record.sweep_logz[0] - z1_top[0])), 0.0)
    e1 = float(record.sweep_entropy[0] - h1_top[0])
    logz, h = top_stats(t)
    if r1 > 0:
        r = np.exp((t1 / t[:, 0]) * np.log(r1))
        logz = logz + np.log1p(r)
        h = h + e1 * r / r1
    return logz, np.maximum(h, 0.0)


def _hermite(record: TokenRecord, temps: np.ndarray):
    """F(T) and F'(T) = H(T) from the cubic Hermite interpolant between nodes."""
    t, f, df = _nodes(record)
    x = np.clip(temps, 0.0, t[-1])
    i = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
    h = t[i + 1] - t[i]
    s = (x - t[i]) / h
    value = (
        (2 * s**3 - 3 * s**2 + 1) * f[i]
        + (s**3 - 2 * s**2 + s) * h * df[i]
        + (-2 * s**3 + 3 * s**2) * f[i + 1]
        + (s**3 - s**2) * h * df[i + 1]
    )
    slope = (
        (6 * s**2 - 6 * s) / h * f[i]
        + (3 * s**2 - 4 * s + 1) * df[i]
        + (-6 * s**2 + 6 * s) / h * f[i + 1]
        + (3 * s**2 - 2 * s) * df[i + 1]
    )
    return value, slope


def _logz_and_entropy(record: TokenRecord, temps) -> tuple[np.ndarray, np.ndarray]:
    temps = np.atleast_1d(np.asarray(temps, dtype=np.float64))
    f, h = _hermite(record, temps)
    logz = f / np.maximum(temps, MIN_T)
    low = temps < SWEEP_TEMPERATURES[0]
    if low.any():
        logz_low, h_low = _low_t(record, temps[low])
        logz[low], h[low] = logz_low, h_low
    h = np.where(temps < MIN_T, 0.0, np.maximum(h, 0.0))
    return logz, h


def probabilities(record: TokenRecord, temps, n: int | None = None) -> np.ndarray:
    """p_i(T) of the top-n raw candidates, shape (n, len(temps))."""
    temps = np.atleast_1d(np.asarray(temps, dtype=np.float64))
    lp = np.array([c.logprob for c in record.top[:n]], dtype=np.float64)[:, None]  # (n, 1)
    logz, _h = _logz_and_entropy(record, temps)
    safe_t = np.maximum(temps, MIN_T)[None, :]
    p = np.exp(np.minimum(lp / safe_t - logz[None, :], 0.0))
    greedy = (np.arange(len(lp)) == 0).astype(np.float64)[:, None]
    return np.where(temps[None, :] < MIN_T, greedy, p)


def entropy(record: TokenRecord, temps) -> np.ndarray:
    """H(T) in nats (0 at T = 0)."""
    return _logz_and_entropy(record, temps)[1]


def has_sweep(record: TokenRecord) -> bool:
    """Whether the record holds a full temperature sweep and candidates to draw."""
    return len(record.sweep_logz) == len(SWEEP_TEMPERATURES) and bool(record.top)
