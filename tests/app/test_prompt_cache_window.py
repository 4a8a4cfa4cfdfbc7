"""The playground reuses the last run's KV cache, says so, and runs cold on request."""

from __future__ import annotations

from tests.app.conftest import run_and_wait


def test_rerun_reuses_the_cache_and_cold_run_does_not(qtbot, replay_window):
    first = run_and_wait(qtbot, replay_window, "Name two rivers.", max_tokens=4)
    again = run_and_wait(qtbot, replay_window, "Name two rivers.", max_tokens=4)
    assert again.done.cached_tokens == first.done.prompt_tokens - 1
    qtbot.waitUntil(lambda: "from cache" in replay_window.status_label.text(), timeout=5_000)
    assert f"({again.done.cached_tokens} of {again.done.prompt_tokens} tokens from cache)" in (
        replay_window.status_label.text()
    )
    assert [t.token_id for t in again.tokens] == [t.token_id for t in first.tokens]
    cache = f"({again.done.cached_tokens} of {again.done.prompt_tokens} tokens from cache)"
    for width, height in ((1024, 700), (1440, 900)):  # the figure stays at common widths
        replay_window.resize(width, height)
        qtbot.waitUntil(lambda w=width: replay_window.width() == w, timeout=5_000)
        qtbot.wait(50)
        shown = replay_window.status_label.shown_text()
        assert shown.startswith(f"TTFT {again.done.ttft_s:.2f} s {cache} · prefill"), shown
    replay_window.prompt.setPlainText("Name two rivers.")
    replay_window.run(cold=True)
    qtbot.waitUntil(lambda: replay_window.state.done is not None, timeout=120_000)
    qtbot.waitUntil(lambda: not replay_window.bridge.busy, timeout=10_000)
    assert replay_window.state.done.cached_tokens == 0
    assert [t.token_id for t in replay_window.state.tokens] == [t.token_id for t in first.tokens]
