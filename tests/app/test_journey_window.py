"""The Journey and Attention-by-position tabs, driven from the playground on the real
default model: a live sampled run and the same kind of run reopened from History."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPoint, QPointF, Qt

from app.core.bridge import EngineBridge
from app.inside.window import TABS
from app.shell.window import PlaygroundWindow
from engine.display.units import fmt_prob
from tests.app.conftest import run_and_wait

PROMPT = "Name a colour of the sky."


def _wait(qtbot, win, what):
    qtbot.waitUntil(lambda: not win.bridge.busy and win._key() in win.cache, timeout=120_000)
    record = win.cache[win._key()]
    assert record.what == what
    return record


def _funnel_rows(win):
    t = win.journey.funnel
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _check_journey(win, state, step):
    """The journey record of `step` against the run's own numbers, and the tab's text."""
    record = win.cache[win._key()]
    d, tok = record.data, state.tokens[step]
    assert record.step == step and d.chosen == tok.token_id
    stages = d.sampling.stages
    assert [s.stage for s in stages] == ["raw", "top-p", "temperature 0.7"]
    # the engine sampled from exactly the funnel's last distribution
    assert abs(stages[-1].chosen_prob - math.exp(tok.sampled_logprob)) < 2e-3
    assert abs(stages[0].chosen_prob - tok.prob) < 2e-3
    rows = _funnel_rows(win)
    assert [r[0] for r in rows] == ["raw", "top-p", "temperature 0.7"]
    assert rows[-1][3] == fmt_prob(stages[-1].chosen_prob)
    assert "temperature is applied last" in win.journey.order.text()
    assert "+46,080 bytes" in win.journey.iter_text.text()  # 30 layers × 2 × 3 × 64 × 4
    heights = win.journey.attn_bars.opts["height"]
    assert len(heights) == 30
    assert np.allclose(heights, [r.attention for r in d.layers])
    return record


def test_journey_and_position_tabs_on_a_live_run(qtbot, window):
    state = run_and_wait(qtbot, window, PROMPT, temperature=0.7, max_tokens=6, seed=3, top_p=0.9)
    assert len(state.tokens) >= 4
    win = window.open_inside(2)
    qtbot.addWidget(win)
    win.tabs.setCurrentIndex(TABS.index("journey"))
    _wait(qtbot, win, "journey")
    record = _check_journey(win, state, 2)
    label = record.data.tokenization.tokens[-1][1]
    assert label in win.journey.tokens.text() and "new token" in win.journey.tokens.text()

    # a click on layer 7 of the residual chart opens that layer's heatmap
    plot = win.journey.layers
    plot.resize(600, 300)
    vb = plot.getPlotItem().vb
    y = float(max(win.journey.attn_bars.opts["height"])) / 2
    scene = vb.mapViewToScene(QPointF(7, y))
    where = plot.mapFromScene(scene)
    qtbot.mouseClick(plot.viewport(), Qt.LeftButton, pos=QPoint(where.x(), where.y()))
    qtbot.waitUntil(lambda: win.tabs.currentIndex() == TABS.index("attention"), timeout=5_000)
    assert win.attention.layer.value() == 7
    assert _wait(qtbot, win, "attention").data.layer == 7

    # back to the journey, then Next step follows the appended token
    win.tabs.setCurrentIndex(TABS.index("journey"))
    _wait(qtbot, win, "journey")
    qtbot.mouseClick(win.journey.next, Qt.LeftButton)
    _wait(qtbot, win, "journey")
    _check_journey(win, state, 3)

    win.tabs.setCurrentIndex(TABS.index("position"))
    pos = _wait(qtbot, win, "position")
    mean = np.array(pos.data.mean)
    assert abs(mean.sum() - 1) < 1e-5 and pos.step == 3
    assert np.allclose(win.position.bars.opts["height"], mean)
    assert win.position.table.rowCount() == 5
    assert win.position.table.item(0, 0).text() == "first token"
    win.position.layer.setCurrentIndex(win.position.layer.findData(4))
    assert np.allclose(win.position.bars.opts["height"], pos.data.by_layer[4])
    assert "layer 4" in win.position.plot.getPlotItem().titleLabel.text
    win.close()


def test_journey_of_a_run_reopened_from_history(qtbot, window, engine_client):
    state = run_and_wait(qtbot, window, PROMPT, temperature=0.7, max_tokens=5, seed=11, top_p=0.9)
    viewer = PlaygroundWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False), load_on_start=False
    )
    qtbot.addWidget(viewer)
    viewer.show()
    viewer.side_tabs.setCurrentWidget(viewer.history)
    assert viewer.history.select_run(state.run_id)
    qtbot.mouseClick(viewer.history.buttons["open"], Qt.LeftButton)
    viewer.select_step(1)
    win = viewer.open_inside(1)
    qtbot.addWidget(win)
    win.tabs.setCurrentIndex(TABS.index("journey"))
    _wait(qtbot, win, "journey")
    _check_journey(win, viewer.state, 1)
    assert viewer.state.run_id == state.run_id
    win.close()
    viewer.cleanup()
