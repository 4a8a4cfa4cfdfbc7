"""Per-run series and speed figures derived from token records (NumPy), shared by
the charts, the status line, the compare table and the HTML report: one
definition of each figure."""

from __future__ import annotations

import numpy as np

TPS_WINDOW = 8  # tokens in the moving average


def decode_rate(elapsed) -> float | None:
    """Decode tokens/s from the steps' arrival times: steps after the first over the
    time from the first to the last. None with fewer than two steps."""
    n = len(elapsed)
    if n < 2 or elapsed[-1] <= elapsed[0]:
        return None
    return (n - 1) / (elapsed[-1] - elapsed[0])


def rolling_tps(elapsed) -> np.ndarray:
    """Tokens/s over the last TPS_WINDOW steps, at each step's arrival time.

    A moving window, because single-step latencies are jagged. The first step
    has no step before it to measure against: NaN (drawn as a gap).
    """
    t = np.asarray(elapsed, dtype=np.float64)
    n = len(t)
    out = np.full(n, np.nan)
    if n < 2:
        return out
    j = np.maximum(np.arange(n) - TPS_WINDOW, 0)
    dt = t - t[j]
    np.divide(np.arange(n) - j, dt, out=out, where=dt > 0)
    out[0] = np.nan
    return out
