"""Round axis ticks: steps of 1, 2 or 5 times a power of ten ("nice numbers",
Heckbert 1990), for the charts the engine draws itself (the HTML report) and the
window's own axes that pyqtgraph does not place (the context chart's used row).
Knows nothing about drawing."""

from __future__ import annotations

import math

NICE_STEPS = (1.0, 2.0, 5.0, 10.0)  # times a power of ten
TARGET_TICKS = 5  # about this many ticks across an axis


def nice_step(span: float, target: int = TARGET_TICKS) -> float:
    """The 1-2-5 step giving about `target` intervals across `span` (> 0)."""
    raw = span / max(target, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    return next(s * power for s in NICE_STEPS if s * power >= raw * (1 - 1e-9))


def nice_ticks(lo: float, hi: float, target: int = TARGET_TICKS) -> list[float]:
    """Multiples of a 1-2-5 step that lie within [lo, hi], lowest first.

    Args:
        lo: the axis's lowest value.
        hi: the axis's highest value.
        target: about how many intervals to aim for.

    Returns:
        The tick values; [lo] when the range is empty.
    """
    if not hi > lo:
        return [lo]
    step = nice_step(hi - lo, target)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [_clean(k * step) for k in range(first, last + 1)]


def _clean(v: float) -> float:
    """k x step without float dust (0.30000000000000004 -> 0.3)."""
    return float(f"{v:.12g}")
