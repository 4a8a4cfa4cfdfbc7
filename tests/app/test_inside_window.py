"""Inside the model, driven from the playground on the real default model: each
view shows the engine's numbers for the selected step."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from app.inside.window import TABS
from engine.display.units import fmt_prob
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


def test_the_views_on_one_inside_window(qtbot, inside, smollm, default_model_path, tmp_path):
    """The lens (and a frozen engine), attention, tokenizer and hardware, closing and
    reopening, and a past run whose model is gone, one after the other on one run: each
    Inside window starts an engine process of its own that loads the model, which five
    tests, each with its own window and run, did five times."""
    window, win = inside
    assert win.tabs.currentIndex() == TABS.index("attention")  # what a fresh window shows
    _lens_view_shows_every_layer_and_the_chosen_token(qtbot, inside)  # first: step 5 unseen
    click_token(qtbot, window, 3)  # back to the step the Inside window opened on
    win.tabs.setCurrentIndex(TABS.index("attention"))
    _attention_view_follows_the_step_layer_and_head(qtbot, inside, smollm, default_model_path)
    _tokenizer_and_hardware_views(qtbot, inside)
    win.tabs.setCurrentIndex(TABS.index("attention"))  # the tab a fresh window opens on
    again = _closing_and_reopening_gives_a_working_window(qtbot, inside)
    _a_past_run_without_its_model_says_so(qtbot, (window, again), tmp_path)


def _attention_view_follows_the_step_layer_and_head(qtbot, inside, smollm, default_model_path):
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
    assert record.data.layer == 7 and record.data.head == 4
    # the session's load_model(default_model_path, prefer="speed"): the window's model
    assert Path(window.model_record.path).resolve() == default_model_path.resolve()
    want = attention_weights(run_pass(smollm.model, list(record.ids)), 7)[4]
    assert np.abs(win.attention.image.image - want).max() < 1e-4
    click_token(qtbot, window, 5)  # the playground's selection moves the inspector
    record = _wait_record(qtbot, win, "attention")
    assert record.step == 5
    assert "attends most to" in win.attention.plot.getPlotItem().titleLabel.text


def _lens_view_shows_every_layer_and_the_chosen_token(qtbot, inside):
    window, win = inside
    win.tabs.setCurrentIndex(TABS.index("lens"))
    record = _wait_record(qtbot, win, "lens")
    assert win.lens.table.rowCount() == record.layers == 30
    chosen = window.state.tokens[3].token_id
    assert record.data.chosen == chosen
    ranks = 10 ** win.lens.rank_curve.getData()[1]  # the rank axis is logarithmic
    assert list(np.rint(ranks)) == [row.chosen_rank for row in record.data.rows]
    final = record.data.rows[-1]
    assert final.chosen_prob == pytest.approx(window.state.tokens[3].prob, abs=1e-3)

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


def _tokenizer_and_hardware_views(qtbot, inside):
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


def _a_past_run_without_its_model_says_so(qtbot, inside, tmp_path):
    from dataclasses import replace

    window, win = inside
    state = window.state
    state.model = replace(state.model, path=str(tmp_path / "gone"))
    win.follow(state, 2)
    assert "not on this machine any more" in win.where.text()


def _closing_and_reopening_gives_a_working_window(qtbot, inside):
    window, win = inside
    win.close()
    again = window.open_inside(2)
    qtbot.addWidget(again)
    assert again is not win and not again.closed
    record = _wait_record(qtbot, again, "attention")
    assert record.step == 2
    return again


READ_TEXT = "Lightning never strikes the same place twice."


def _check_read_step(qtbot, win, state, step, n_context):
    """Inside at `step` of the read `state`: the journey's chosen token is the read's,
    with the read's probability and rank; the pass is the context, then the text's
    tokens before the step (the text once, never as a prompt and again as an answer)."""
    win.follow(state, step)
    win.tabs.setCurrentIndex(TABS.index("journey"))
    record = _wait_record(qtbot, win, "journey")
    tok, d = state.tokens[step], record.data
    assert d.reading is True
    chosen = d.projection.chosen
    assert chosen.token_id == tok.token_id
    assert chosen.prob == pytest.approx(tok.prob, abs=1e-3)
    assert chosen.prob == pytest.approx(tok.prob, rel=1e-2)  # a small p too
    assert chosen.rank == tok.rank
    shown = [tid for tid, _label, _raw in d.tokenization.tokens]
    assert d.tokenization.prompt_tokens == n_context
    assert shown[n_context:] == [t.token_id for t in state.tokens[: step + 1]]
    assert len(shown) == n_context + step + 1  # not the text twice
    assert f"{len(shown)} tokens ({n_context} of the context" in win.journey.tokens.text()
    assert [s.stage for s in d.sampling.stages] == ["raw"]  # a read samples nothing
    assert d.sampling.stages[0].chosen_prob == pytest.approx(tok.prob, abs=1e-3)
    funnel = win.journey.funnel  # the read's one stage, its p with its digits
    assert funnel.rowCount() == 1 and funnel.item(0, 4).text() == str(tok.rank)
    assert funnel.item(0, 3).text() == fmt_prob(d.sampling.stages[0].chosen_prob)
    assert f"p = {fmt_prob(chosen.prob)}, rank {tok.rank:,}" in win.journey.proj_text.text()
    # the logit lens's last layer is the model's output: the same p and rank
    win.tabs.setCurrentIndex(TABS.index("lens"))
    lens = _wait_record(qtbot, win, "lens")
    assert lens.data.chosen == tok.token_id and len(lens.ids) == n_context + step
    final = lens.data.rows[-1]
    assert final.chosen_prob == pytest.approx(tok.prob, abs=1e-3)
    assert final.chosen_rank == tok.rank
    return record


def test_inside_a_read_gives_the_reads_numbers(qtbot, window, smollm, default_model_path):
    """A read (Mode: Read a text) inspected: each step's prediction is the one the read
    scored, after the read's context (the model's start token, or the system box)."""
    from engine.backends.mlx.read_pass import start_token_id
    from tests.app.test_read_mode import read_and_wait

    state = read_and_wait(qtbot, window, READ_TEXT)
    assert state.reading and state.error is None
    lm = smollm  # the session's load_model(default_model_path, prefer="speed"): the window's
    assert Path(window.model_record.path).resolve() == default_model_path.resolve()
    text_ids = list(lm.tokenizer.encode(READ_TEXT, add_special_tokens=False))
    assert [t.token_id for t in state.tokens] == text_ids
    never = [t.text for t in state.tokens].index(" never")  # an unlikely token
    assert state.tokens[never].rank > 100  # the old pass (the text twice) made it rank 1
    win = window.open_inside(never)
    qtbot.addWidget(win)
    try:
        record = _check_read_step(qtbot, win, state, never, 1)
        assert record.data.tokenization.tokens[0][0] == start_token_id(lm.tokenizer)
        assert record.data.iteration.next_step == never + 1
        assert "the text read goes on" in win.journey.iter_text.text()
        last = len(state.tokens) - 1
        record = _check_read_step(qtbot, win, state, last, 1)
        assert record.data.iteration.next_step is None
        assert "the text ends here" in win.journey.iter_text.text()

        # With a context in the system box: the pass starts with the context's tokens.
        context = "A list of old sayings."
        window.controls.system.setPlainText(context)
        state = read_and_wait(qtbot, window, READ_TEXT)
        assert state.settings.system_prompt == context
        n_context = len(lm.tokenizer.encode(context))
        _check_read_step(qtbot, win, state, 2, n_context)
    finally:
        win.close()
