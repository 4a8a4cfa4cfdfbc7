"""The playground window driven like a person would, on the real default model."""

from __future__ import annotations

import math
import os
import signal

import mlx.core as mx
import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QTextCursor

from engine.run.prompt import encode_prompt
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings
from tests.app.conftest import RUN_MS, run_and_wait, start_run
from tests.app.timing import FrameWork

QUESTION = "What is the capital of France?"


def click_token(qtbot, win, step: int) -> None:
    """A real mouse click in the middle of token `step` in the output view."""
    view = win.output
    cursor = view._cursor_for(step)
    start, end = cursor.selectionStart(), cursor.selectionEnd()
    c = QTextCursor(view.document())
    c.setPosition((start + end) // 2)
    rect = view.cursorRect(c)
    qtbot.mouseClick(
        view.viewport(), Qt.LeftButton, pos=QPoint(rect.center().x(), rect.center().y())
    )


def test_token_view_shows_the_engine_output(qtbot, window, engine_client, default_model_path):
    state = run_and_wait(qtbot, window, QUESTION)
    assert state.done.finish_reason == "eos" and state.tokens[-1].eos
    assert window.output.plain_text() == state.done.text
    assert "Paris" in window.output.toPlainText()
    # The same run straight through the engine gives the same text.
    direct = RunResult()
    settings = SamplingSettings(temperature=0.0, max_tokens=16, seed=5)
    for rec in engine_client.generate(QUESTION, settings, str(default_model_path)):
        direct.add(rec)
    assert window.output.plain_text() == direct.done.text
    qtbot.waitUntil(lambda: f"{state.done.generated_tokens} tokens" in window.status_label.text())
    assert f"decode {state.done.decode_tps:.1f} tok/s" in window.status_label.text()
    assert "CPU" in window.status_label.text() or "GPU" in window.status_label.text()


def test_clicking_a_token_points_every_chart_at_it(qtbot, replay_window):
    state = run_and_wait(qtbot, replay_window, "Name a fruit.", temperature=0.9, max_tokens=8)
    step = 2
    click_token(qtbot, replay_window, step)
    assert state.selected == step
    rec = state.tokens[step]
    dist = replay_window.dist_chart
    n = len(rec.top)
    assert dist.token_ids[:n] == [c.token_id for c in rec.top]
    np.testing.assert_allclose(dist.raw_probs[:n], [math.exp(c.logprob) for c in rec.top])
    np.testing.assert_allclose(dist.sampled_probs[:n], rec.sampled_probs)
    assert rec.token_id in dist.token_ids
    assert replay_window.temp_chart.record is rec
    assert replay_window.timeline_chart.lines[0].value() == step
    # "Follow latest" hands the charts back to the newest token.
    qtbot.mouseClick(replay_window.follow_button, Qt.LeftButton)
    assert replay_window.dist_chart.token_ids[0] == state.tokens[-1].top[0].token_id


def test_temperature_slider_redraws_from_the_steps_logits(qtbot, window, smollm):
    prompt = "Describe the sea."
    state = run_and_wait(qtbot, window, prompt, max_tokens=4)
    step = 1
    window.select_step(step)
    rec = state.tokens[step]
    # Independent: the step's full distribution from one forward pass in this process.
    ids = encode_prompt(smollm.tokenizer, prompt, SamplingSettings()).ids
    ids += [t.token_id for t in state.tokens[:step]]
    logits = smollm.model(mx.array(ids)[None])[0, -1].astype(mx.float32)
    lp = np.array(logits - mx.logsumexp(logits), dtype=np.float64)
    top5 = [c.token_id for c in rec.top[:5]]
    runs_before = window.bridge.client._ids
    for slider_value in (30, 125, 190):  # T = 0.3, 1.25, 1.9
        window.controls.temp_slider.setValue(slider_value)
        t = slider_value / 100
        s = lp / t
        exact = np.exp(s - np.logaddexp.reduce(s))[top5]
        np.testing.assert_allclose(window.temp_chart.marker_probs, exact, atol=2e-3)
        assert window.temp_chart.t_line.value() == pytest.approx(t)
        p = np.exp(s - np.logaddexp.reduce(s))
        h = float(-(p * np.log(np.maximum(p, 1e-300))).sum())
        assert window.temp_chart.marker_entropy == pytest.approx(h, abs=0.05)
    assert window.bridge.client._ids is runs_before and not window.bridge.busy  # no re-run


def test_context_chart_counts_match_the_run(qtbot, replay_window, default_model_path):
    # default_model_path: the prompt counter reads the model's own tokenizer files
    replay_window.controls.system.setPlainText("You answer in one word.")
    state = run_and_wait(qtbot, replay_window, "Capital of Italy?", max_tokens=6)
    d = state.done
    counts = replay_window.context_chart.counts
    assert counts["system"] == d.system_tokens > 0
    assert counts["system"] + counts["prompt"] == d.prompt_tokens
    assert counts["output"] == len(state.tokens)  # the answer and its end token
    assert len(state.tokens) == d.generated_tokens + (d.finish_reason == "eos")
    assert counts["context"] == d.context_length == 8192
    assert counts["kv_bytes"] == d.kv_cache_bytes > 0
    # The live count beside the prompt agrees with what the engine used.
    # (It is counted on a timer and a tokenizer thread: wait for it to settle; on a
    # failure, say what it counted.)
    label, expected = replay_window.token_count, f"{d.prompt_tokens:,} tokens"
    try:
        qtbot.waitUntil(lambda: label.text().startswith(expected), timeout=5_000)
    except Exception:  # pytest-qt's TimeoutError: say what was counted, and from what
        pytest.fail(
            f"counter {label.text()!r} != {expected!r}; prompt "
            f"{replay_window.prompt.toPlainText()!r}, system "
            f"{replay_window.controls.system.toPlainText()!r}, "
            f"mode {replay_window.controls.mode.currentIndex()}"
        )


def test_streaming_draws_one_chart_per_tick_never_all_per_token(qtbot, window):
    with FrameWork(window) as work:
        state = run_and_wait(qtbot, window, "Write a short poem about rain.", max_tokens=40)
    assert state.done.generated_tokens >= 20
    work.check(state.n)


def test_stop_ends_the_run_fast_and_keeps_partial_text(qtbot, window):
    start_run(window, "Count slowly from one to two hundred.", max_tokens=300)
    qtbot.waitUntil(lambda: window.state.n >= 5, timeout=RUN_MS)
    at_stop = window.state.n
    qtbot.keyClick(window, Qt.Key_Escape)
    qtbot.waitUntil(lambda: window.state.done is not None, timeout=RUN_MS)
    # Stop is checked between tokens: it lands within a step or two (counted in tokens,
    # not timed: how long a step takes depends on the machine's load).
    assert window.state.done.generated_tokens <= at_stop + 8  # a frame may hold a few more
    assert window.state.done.finish_reason == "cancelled"
    assert window.output.plain_text() == window.state.done.text != ""
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=5_000)
    assert window.run_button.isEnabled()


def test_bad_model_shows_an_error_and_the_window_recovers(qtbot, window, tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    window.load_model(str(bad))
    qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=RUN_MS)
    assert "not a usable GGUF file" in window.banner.text()
    # The model box shows the model runs will use, not the broken file.
    assert window.picker.current() == window.model_record.path
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=10_000)
    state = run_and_wait(qtbot, window, QUESTION)
    assert "Paris" in state.done.text
    assert not window.banner.isVisible()


def test_prompt_longer_than_context_is_explained(qtbot, replay_window):
    window = replay_window
    state = run_and_wait(qtbot, window, "word " * 8300)
    assert state.error is not None and state.done is None
    assert "context window is 8,192" in window.banner.text()
    # The context chart shows the overflow, not "0 of 8,192".
    over = window.context_chart.counts["over"]
    assert over > 0 and "over the 8,192-token window" in window.context_chart.summary
    assert window.run_button.isEnabled()
    state = run_and_wait(qtbot, window, QUESTION)
    assert "Paris" in state.done.text


def test_engine_killed_mid_run_keeps_partial_output(qtbot, window):
    start_run(window, "Tell me a long story about a lighthouse.", max_tokens=300)
    qtbot.waitUntil(lambda: window.state.n >= 3, timeout=RUN_MS)
    os.kill(window.bridge.client.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.state.error is not None, timeout=10_000)
    assert window.banner.text().startswith("Engine died during decode")
    kept = window.output.plain_text()
    assert kept and kept == window.state.text
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=10_000)
    state = run_and_wait(qtbot, window, QUESTION)
    assert "Paris" in state.done.text


def test_empty_prompt_and_bad_settings_are_explained(qtbot, replay_window):
    replay_window.prompt.setPlainText("   ")
    replay_window.run()
    assert "prompt is empty" in replay_window.banner.text()
    assert not replay_window.bridge.busy


def test_prompt_token_toggle_shows_the_models_tokens(qtbot, window, smollm):
    window.controls.system.setPlainText("Be brief.")
    window.prompt.setPlainText("Hello world 42")
    qtbot.mouseClick(window.show_tokens, Qt.LeftButton)
    qtbot.waitUntil(lambda: len(window.prompt_tokens.ids) > 0, timeout=10_000)
    # mlx-lm's own tokenizer (transformers) is the reference for the GUI's light one.
    settings = SamplingSettings(system_prompt="Be brief.")
    expected = encode_prompt(smollm.tokenizer, "Hello world 42", settings).ids
    assert window.prompt_tokens.ids == expected
    assert "4" in window.prompt_tokens.pieces and "2" in window.prompt_tokens.pieces
    assert window.prompt_stack.currentWidget() is window.prompt_tokens
    # Partial UTF-8 tokens show as their bytes, and the pieces' bytes rebuild the text.
    window.prompt.setPlainText("日本語 😀")
    qtbot.waitUntil(lambda: any("<0x" in p for p in window.prompt_tokens.pieces), timeout=10_000)
    joined = b"".join(window.prompt_tokens.raw).decode("utf-8")
    assert "日本語 😀" in joined
    assert "\ufffd" not in "".join(window.prompt_tokens.pieces)


def test_numbers_on_screen_are_the_records(qtbot, replay_window):
    """Bars, status line, context title and throughput read off the chart items."""
    from engine.display.units import human_bytes
    from engine.run.series import decode_rate

    state = run_and_wait(
        qtbot, replay_window, "List three fruits.", temperature=0.8, max_tokens=10, seed=4
    )
    for step in range(state.n):
        replay_window.select_step(step)
        rec = state.tokens[step]
        dist = replay_window.dist_chart
        for tid, shown in zip(dist.token_ids, dist.sampled_probs, strict=True):
            want = rec.sampled_prob_of(tid)
            assert math.isnan(shown) if want is None else shown == pytest.approx(want)
    d = state.done
    assert f"decode {d.decode_tps:.1f} tok/s" in replay_window.status_label.text()
    assert d.decode_tps == pytest.approx(decode_rate([t.elapsed_s for t in state.tokens]))
    assert f"KV cache {human_bytes(d.kv_cache_bytes)}" in replay_window.context_chart.summary
    assert human_bytes(d.kv_cache_bytes).endswith(("kB", "MB"))
    tps = replay_window.throughput_chart.tps
    assert math.isnan(tps[0]) and not np.isnan(tps[1:]).any()  # nothing copied into step 0
    # No system prompt: the template's own 21-token system block is counted as system.
    assert replay_window.context_chart.counts["system"] == d.system_tokens == 21


@pytest.mark.slow
def test_a_5000_token_stream_at_1000_per_second_keeps_the_window_smooth(qtbot, replay_window):
    """Replays real records 5,000 times at 1,000 tokens/s (faster than a small model on
    Apple Silicon): tokens arrive in frames, one chart is drawn per tick, and every token
    is shown."""
    import dataclasses

    N = 5000
    state = run_and_wait(qtbot, replay_window, "Say hello.", max_tokens=8, temperature=0.8)
    real = state.tokens
    replay_window.model.show(
        type(state)(prompt="replay", settings=state.settings, model=state.model)
    )
    fake = [
        dataclasses.replace(real[i % len(real)], step=i, elapsed_s=i / 1000, latency_s=1 / 1000)
        for i in range(N)
    ]

    def feed():
        for _ in range(33):  # every 33 ms: 1,000 tokens/s
            if fake:
                replay_window.bridge._queue.put(fake.pop(0))

    feeder = QTimer()
    feeder.setInterval(33)
    feeder.timeout.connect(feed)
    with FrameWork(replay_window) as work:
        feeder.start()
        qtbot.waitUntil(
            lambda: (
                replay_window.state.n == N and not replay_window._dirty and not replay_window._stale
            ),
            timeout=90_000,
        )
        feeder.stop()
    work.check(N)
    assert len(work.batches) < N / 10  # a frame takes many tokens at once, never one by one
    assert replay_window.output.plain_text() == "".join(real[i % len(real)].text for i in range(N))
    assert len(replay_window.output._records) == N  # none dropped
    assert replay_window.timeline_chart.prob_curve.getData()[0][-1] == N - 1
