"""The thinking lesson on a server that thinks: a fake OpenAI-compatible server
streaming `reasoning_content` (no thinking model installs offline here, and the tour
ships no recording). The lesson runs its prompt there and counts the run's thinking
tokens; on a model that does not think it says so."""

from __future__ import annotations

import pytest

from app.tour.lessons import LESSONS
from tests.app.conftest import RUN_MS
from tests.app.test_remote_window import use_model
from tests.app.test_thinking_window import think
from tests.fake_server import FakeServer, Script, finish_chunk, vllm_chunk, vllm_models

THINKING = next(i for i, x in enumerate(LESSONS) if x.key == "thinking")


@pytest.fixture
def fake():
    s = FakeServer()
    yield s
    s.close()


def _show_me(qtbot, window):
    panel = window.tour.open(THINKING)
    with qtbot.waitSignal(panel.finished, timeout=RUN_MS) as got:
        panel.show_me.click()
    key, ctx, sentence = got.args
    assert key == "thinking" and "failed" not in ctx and panel.sentence.text() == sentence.text
    return ctx, sentence


def test_the_thinking_lesson_on_a_server_that_thinks(qtbot, window, fake):
    fake.script = Script(
        models=vllm_models(4096),
        events=[
            think("17 plus 25", -0.3),
            think(" is 42.", -0.1),
            vllm_chunk(" 42", -0.05, [(" 42", -0.05), (" 41", -3.2)]),
            finish_chunk("stop"),
        ],
    )
    use_model(qtbot, window, f"{fake.url}#Qwen/Qwen3-0.6B")
    ctx, s = _show_me(qtbot, window)
    run = ctx["run"]
    assert window.state is run and run.remote
    assert [t.thinking for t in run.tokens] == [True, True, False]
    assert s.numbers == {"thinking": 2, "tokens": 3} and run.done.thinking_tokens == 2
    assert "(on a server) thought for 2 of its 3 tokens (67 %)" in s.text
    assert window.tour.host.highlighted is window.thinking and window.thinking.isVisible()
    sent = [r for r in fake.requests if r.get("body")][-1]["body"]
    assert sent["messages"][-1]["content"] == "What is 17 + 25? Think step by step."


def test_the_thinking_lesson_says_when_a_model_does_not_think(qtbot, window, fake):
    fake.script = Script(
        models=vllm_models(4096),
        events=[vllm_chunk(" 42", -0.05, [(" 42", -0.05)]), finish_chunk("stop")],
    )
    use_model(qtbot, window, f"{fake.url}#Qwen/Qwen3-0.6B")
    ctx, s = _show_me(qtbot, window)
    assert s.numbers == {"thinking": 0, "tokens": 1} and ctx["run"].done.thinking_tokens == 0
    assert "wrote 0 thinking tokens out of 1: it is not a thinking model" in s.text
    assert window.tour.host.highlighted is window.output  # no thinking block to frame
