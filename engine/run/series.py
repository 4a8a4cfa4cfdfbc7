"""Per-run series and speed figures derived from token records (NumPy), shared by
the charts, the status line, the compare table and the HTML report: one
definition of each figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.run.continuation import own_choices
from engine.run.run_kind import generated

if TYPE_CHECKING:
    import numpy as np

TPS_WINDOW = 8  # tokens in the moving average


def decode_tps(n_steps: int, first_s: float | None, last_s: float | None) -> float | None:
    """Decode tokens/s, the one definition: the steps after the first over the time
    from the first step's arrival to the last's (the first belongs to prefill).

    Args:
        n_steps: tokens generated.
        first_s: when the first arrived (any clock), None if none did.
        last_s: when the last arrived, on the same clock.

    Returns:
        tokens/s, or None with fewer than two steps or no time between them.
    """
    if n_steps < 2 or first_s is None or last_s is None or last_s <= first_s:
        return None
    return (n_steps - 1) / (last_s - first_s)


def decode_rate(elapsed) -> float | None:
    """Decode tokens/s from the steps' arrival times (see `decode_tps`)."""
    if len(elapsed) == 0:
        return None
    return decode_tps(len(elapsed), elapsed[0], elapsed[-1])


def rolling_tps(elapsed) -> np.ndarray:
    """Tokens/s over the last TPS_WINDOW steps, at each step's arrival time.

    A moving window, because single-step latencies are jagged. The first step
    has no step before it to measure against: NaN (drawn as a gap).
    """
    import numpy as np  # here: the command line imports this module for every command

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


def streaming_figures(tokens, branch: dict | None) -> tuple[float | None, float | None]:
    """A run's TTFT and decode tokens/s before its DoneRecord, counted as the engine
    counts them there: over the steps the model sampled in this run. A branch's
    inherited prefix (engine/run/run_kind.py) and a token chosen by the person are left
    out: the first sampled step is the first token, the rest are decode steps.

    Args:
        tokens: the run's token records so far, by step.
        branch: the run's branch field, or None.

    Returns:
        (seconds to the first sampled token, decode tokens/s per `decode_tps`); None
        where not measurable yet.
    """
    timed = own_choices(generated(tokens, branch))
    ttft = timed[0].elapsed_s if timed else None
    return ttft, decode_rate([t.elapsed_s for t in timed])
