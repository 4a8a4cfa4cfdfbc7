"""Round axis ticks in the HTML report: seen were 0.998, 74.8 and 21.8 (quarters of
the data's range). Each tick must be a multiple of 1, 2 or 5 x 10^k, inside the axis,
and drawn where a linear scale (NumPy's interp) puts it."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from engine.display.ticks import nice_ticks
from engine.sessions.export_html import PAD_B, PAD_L, PAD_R, PAD_T, H, W, svg_line_chart


def _is_nice_grid(ticks: list[float]) -> bool:
    steps = np.diff(ticks)
    step = float(steps[0])
    mantissa = step / 10 ** math.floor(math.log10(step))
    on_grid = all(abs(t / step - round(t / step)) < 1e-9 for t in ticks)
    return np.allclose(steps, step) and round(mantissa, 9) in (1.0, 2.0, 5.0) and on_grid


@pytest.mark.parametrize(
    "lo, hi", [(0, 0.998), (0, 74.8), (0, 21.8), (1, 37), (0, 2.4e6), (-3.2, 0.0), (0.001, 0.0042)]
)
def test_nice_ticks_are_round_and_inside(lo, hi):
    ticks = nice_ticks(lo, hi)
    assert 3 <= len(ticks) <= 11 and _is_nice_grid(ticks)
    assert lo - 1e-12 <= ticks[0] and ticks[-1] <= hi + 1e-12
    step = ticks[1] - ticks[0]
    assert ticks[0] - step < lo and ticks[-1] + step > hi  # none missing at either end


def _labels(svg: str, anchor: str) -> list[tuple[float, float, str]]:
    """(x, y, text) of the tick labels with this text-anchor."""
    pat = rf"<text x='([\d.]+)' y='([\d.]+)' text-anchor='{anchor}'>([^<]*)</text>"
    return [(float(x), float(y), t) for x, y, t in re.findall(pat, svg)]


def test_report_axes_use_round_ticks_where_a_linear_scale_puts_them():
    xs = list(range(1, 75))  # 74 steps; probabilities up to 0.998
    ys = list(np.linspace(0.2, 0.998, len(xs)))
    svg = svg_line_chart("p", xs, [(ys, "#000", "prob")], "step", "p")
    left = [(y, float(t)) for _x, y, t in _labels(svg, "end")]
    values = [v for _y, v in left]
    assert _is_nice_grid(values) and values[-1] <= 0.998
    want_y = np.interp(values, [0, 0.998], [H - PAD_B, PAD_T])
    assert [y - 4 for y, _v in left] == pytest.approx(want_y, abs=0.06)
    bottom = [(x, float(t)) for x, _y, t in _labels(svg, "middle") if t.replace(".", "").isdigit()]
    xvals = [v for _x, v in bottom]
    assert _is_nice_grid(xvals) and xvals[0] >= 1 and xvals[-1] <= 74
    want_x = np.interp(xvals, [1, 74], [PAD_L, W - PAD_R])
    assert [x for x, _v in bottom] == pytest.approx(want_x, abs=0.06)
