"""Per-run series derived from token records (NumPy), shared by the charts and
the HTML report."""

from __future__ import annotations

import numpy as np

TPS_WINDOW = 8  # tokens in the moving average


def rolling_tps(elapsed) -> np.ndarray:
    """Tokens/s over the last TPS_WINDOW tokens, at each token's arrival time.

    A moving window, because single-token latencies are jagged: with the next
    step queued ahead, the last token of a run arrives almost at once.
    """
    t = np.asarray(elapsed, dtype=np.float64)
    n = len(t)
    if n < 2:
        return np.zeros(n)
    j = np.maximum(np.arange(n) - TPS_WINDOW, 0)
    dt = t - t[j]
    out = np.divide(np.arange(n) - j, dt, out=np.zeros(n), where=dt > 0)
    out[0] = out[1]
    return out
