"""Inside the model, driven from the playground on the real default model: each
view shows the engine's numbers for the selected step."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from app.inside.window import TABS
from tests.app.conftest import run_and_wait
from tests.app.test_playground import click_token

PROMPT = "The cat sat on the mat because it was warm."


@pytest.fixture
def inside(qtbot, window):
    state = run_and_wait(qtbot, window, PROMPT, max_tokens=8)
    assert state.done is not None
    win = window.open_inside(3)
    qtbot.addWidget(win)
    yield window, win
    win.close()


def _wait_record(qtbot, win, what):
    qtbot.waitUntil(lambda: not win.bridge.busy and win._key() in win.cache, timeout=120_000)
    record = win.cache[win._key()]
    assert record.what == what
    return record


def test_attention_view_follows_the_step_layer_and_head(qtbot, inside):
    from engine.backends.mlx.inside import attention_weights, run_pass

    window, win = inside
    assert win.tabs.currentIndex() == TABS.index("attention")
    record = _wait_record(qtbot, win, "attention")
    state = window.state
    assert record.step == 3 and record.ids[-3:] == tuple(t.token_id for t in state.tokens[:3])
    shown = win.attention.image.image
    assert shown.shape == (len(record.ids), len(record.ids))
    assert np.allclose(shown.sum(-1), 1.0, atol=1e-4) and np.triu(shown, 1).max() == 0
    win.attention.layer.setValue(7)
    win.attention.head.setCurrentIndex(win.attention.head.findData(4))
    record = _wait_record(qtbot, win, "attention")
    assert record.data["layer"] == 7 and record.data["head"] == 4
    from engine.backends.mlx.loader import load_model

    lm, _i, _s = load_model(Path(window.model_record.path), prefer="speed")
    want = attention_weights(run_pass(lm.model, list(record.ids)), 7)[4]
    assert np.abs(win.attention.image.image - want).max() < 1e-4
    click_token(qtbot, window, 5)  # the playground's selection moves the inspector
    record = _wait_record(qtbot, win, "attention")
    assert record.step == 5
    assert "attends most to" in win.attention.plot.getPlotItem().titleLabel.text


def test_lens_view_shows_every_layer_and_the_chosen_token(qtbot, inside):
    window, win = inside
    win.tabs.setCurrentIndex(TABS.index("lens"))
    record = _wait_record(qtbot, win, "lens")
    assert win.lens.table.rowCount() == record.layers == 30
    chosen = window.state.tokens[3].token_id
    assert record.data["chosen"] == chosen
    ranks = 10 ** win.lens.rank_curve.getData()[1]  # the rank axis is logarithmic
    assert list(np.rint(ranks)) == [row["chosen_rank"] for row in record.data["rows"]]
    final = record.data["rows"][-1]
    assert final["chosen_prob"] == pytest.approx(window.state.tokens[3].prob, abs=1e-3)

    # The engine freezes: the fault shows in place of the views, the lens keeps its rows.
    client = win.bridge.client
    client.hang_timeout_s = client.load_timeout_s = 2.0
    os.kill(client.pid, signal.SIGSTOP)
    click_token(qtbot, window, 5)
    qtbot.waitUntil(lambda: win.body.currentWidget() is win.fault, timeout=30_000)
    assert win.fault.message.text().startswith("Engine hung during ")
    assert 5 not in {key[2] for key in win.cache}  # nothing computed for step 5
    assert win.lens.table.rowCount() == 30  # the earlier result stays
    qtbot.waitUntil(lambda: not win.bridge.busy, timeout=10_000)
    client.hang_timeout_s = client.load_timeout_s = 120.0
    win.fault.retry.click()  # a fresh engine computes it
    assert win.body.currentWidget() is win.tabs
    record = _wait_record(qtbot, win, "lens")
    assert record.step == 5 and win.lens.table.rowCount() == 30


def test_tokenizer_and_hardware_views(qtbot, inside):
    window, win = inside
    win.tabs.setCurrentIndex(TABS.index("tokenizer"))
    tok = win.tokenizer
    tok.text.setPlainText("Hello wörld 日本")
    assert "".join(s.text for s in tok._spans) == "Hello wörld 日本"
    assert tok.by_model.rowCount() >= 2  # every installed model's count
    assert tok.bars.opts["height"][0] == 1.0  # English against itself
    win.tabs.setCurrentIndex(TABS.index("hardware"))
    hw = win.hardware
    assert len(hw.bars.opts["x"]) == len(window.state.tokens) - 1
    assert hw.mem_limit.isVisible() and "measured on this CPU" in hw.note.text()
    # The path the weights took, in the run's own model record's words.
    assert f"Compute path: {window.state.model.compute.rstrip('.')}." in hw.note.text()
    assert window.state.model.compute.startswith("float32: ")  # the suite's pinned path


def test_a_past_run_without_its_model_says_so(qtbot, inside, tmp_path):
    from dataclasses import replace

    window, win = inside
    state = window.state
    state.model = replace(state.model, path=str(tmp_path / "gone"))
    win.follow(state, 2)
    assert "not on this machine any more" in win.where.text()


def test_closing_and_reopening_gives_a_working_window(qtbot, inside):
    window, win = inside
    win.close()
    again = window.open_inside(2)
    qtbot.addWidget(again)
    assert again is not win and not again.closed
    record = _wait_record(qtbot, again, "attention")
    assert record.step == 2
