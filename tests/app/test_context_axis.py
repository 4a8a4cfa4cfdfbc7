"""The context chart's stretched "used" row has its own token axis: seen was the used
row drawn against the whole window's axis, so 21 system tokens read as ~3,500."""

from __future__ import annotations

import numpy as np
import pytest

from app.charts.context import ContextChart
from app.session.run_state import RunState
from engine.run.records import ModelRecord, PrefillRecord

CONTEXT, PROMPT, SYSTEM = 8192, 49, 21


@pytest.fixture
def chart(qtbot):
    state = RunState(prompt="x")
    state.model = ModelRecord(
        name="m",
        path="p",
        architecture="llama",
        quantization="q",
        size_bytes=1,
        context_length=CONTEXT,
        device="CPU",
        load_s=0.0,
    )
    state.prefill = PrefillRecord(PROMPT, PROMPT, 0.1, SYSTEM)
    c = ContextChart()
    qtbot.addWidget(c)
    c.update_from(state)
    return c


def test_used_row_ticks_count_its_own_tokens(chart):
    plot = chart.getPlotItem()
    xs = np.array([x for x, _label in chart.used_ticks])
    tokens = np.array([int(label.replace(",", "")) for _x, label in chart.used_ticks])
    assert tokens[0] == 0 and tokens[-1] <= PROMPT < tokens[-1] + np.diff(tokens)[0]
    # Read the system bar's end (row 1) through the bottom axis: 21 tokens, not ~3,500.
    bar = chart.bars["system"].opts
    row1 = [i for i, y in enumerate(bar["y"]) if y == 1][0]
    end_x = bar["x0"][row1] + bar["width"][row1]
    assert np.interp(end_x, xs, tokens) == pytest.approx(SYSTEM)
    assert xs[-1] / tokens[-1] == pytest.approx(CONTEXT / PROMPT)  # the stretch, ×167
    assert plot.getAxis("bottom")._tickLevels[0] == chart.used_ticks
    assert plot.getAxis("bottom").labelText.startswith("used part: tokens (×167")
    assert plot.getAxis("top").isVisible()  # the whole window's tokens, beside row 0
