"""The playground reuses the last run's KV cache, says so, and runs cold on request."""

from __future__ import annotations

from tests.app.conftest import run_and_wait


def test_rerun_reuses_the_cache_and_cold_run_does_not(qtbot, window):
    first = run_and_wait(qtbot, window, "Name two rivers.", max_tokens=4)
    again = run_and_wait(qtbot, window, "Name two rivers.", max_tokens=4)
    assert again.done.cached_tokens == first.done.prompt_tokens - 1
    qtbot.waitUntil(lambda: "from cache" in window.status_label.text(), timeout=5_000)
    assert f"({again.done.cached_tokens} of {again.done.prompt_tokens} tokens from cache)" in (
        window.status_label.text()
    )
    assert [t.token_id for t in again.tokens] == [t.token_id for t in first.tokens]
    window.prompt.setPlainText("Name two rivers.")
    window.run(cold=True)
    qtbot.waitUntil(lambda: window.state.done is not None, timeout=120_000)
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=10_000)
    assert window.state.done.cached_tokens == 0
    assert [t.token_id for t in window.state.tokens] == [t.token_id for t in first.tokens]
