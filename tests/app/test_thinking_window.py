"""Thinking tokens in the playground: a collapsible block apart from the answer,
shaded like it, with its own count, time and context segment; never sent back."""

from __future__ import annotations

import pytest

from tests.app.conftest import run_and_wait
from tests.app.test_remote_window import use_model
from tests.fake_server import FakeServer, Script, finish_chunk, vllm_chunk, vllm_models


@pytest.fixture
def fake():
    s = FakeServer()
    yield s
    s.close()


def think(text: str, lp: float) -> dict:
    entry = {"token": text, "logprob": lp, "top_logprobs": [{"token": text, "logprob": lp}]}
    delta = {"reasoning_content": text}
    return {
        "choices": [
            {"index": 0, "delta": delta, "finish_reason": None, "logprobs": {"content": [entry]}}
        ]
    }


def test_thinking_streams_in_its_own_block(qtbot, window, fake):
    fake.script = Script(
        models=vllm_models(4096),
        events=[
            think("Capital", -0.05),
            think(" of France", -1.2),
            think(" is Paris.", -0.4),
            vllm_chunk(" Paris", -0.1, [(" Paris", -0.1), (" Lyon", -2.5)]),
            vllm_chunk(".", -0.3, [(".", -0.3)]),
            finish_chunk("stop"),
        ],
    )
    use_model(qtbot, window, f"{fake.url}#Qwen/Qwen3-0.6B")
    state = run_and_wait(qtbot, window, "What is the capital of France?")
    assert window.thinking.isVisible()
    assert window.thinking.view.plain_text() == "Capital of France is Paris."
    assert window.output.plain_text() == " Paris."
    header = window.thinking.header.text()
    seconds = sum(t.latency_s for t in state.tokens if t.thinking)
    assert "3 tokens" in header and f"{seconds:.1f} s" in header and "60% of the output" in header
    assert window.context_chart.counts["thinking"] == 3
    assert window.context_chart.counts["output"] == 2
    # Steps map across the two views: step 1 is the second thinking token, step 3 the answer's 1st.
    window.select_step(1)
    assert window.thinking.view._selected == 1 and window.output._selected is None
    window.select_step(3)
    assert window.output._selected == 0 and window.thinking.view._selected is None
    # Shaded by probability like the answer: its records keep their logprobs.
    assert [round(r.logprob, 2) for r in window.thinking.view._records] == [-0.05, -1.2, -0.4]
    # Folding hides the tokens, not the summary.
    window.thinking.header.setChecked(False)
    assert not window.thinking.view.isVisible() and window.thinking.header.isVisible()
    # The next turn sends the answer without its thinking.
    assert window.conversation.turns[-1].answer == " Paris."
    window.prompt.setPlainText("And of Spain?")
    window.run()
    qtbot.waitUntil(lambda: len(fake.requests) >= 3 and not window.bridge.busy, timeout=30_000)
    sent = [r for r in fake.requests if r.get("body")][-1]["body"]["messages"]
    assert sent[1] == {"role": "assistant", "content": " Paris."}
