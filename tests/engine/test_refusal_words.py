"""Issue 37 (cosmetic): a prompt one token too long is refused in good English."""

from __future__ import annotations

import pytest

from engine.backends.mlx.generate import PromptTooLong, plan_run
from engine.run.prompt import encode_prompt
from engine.run.settings import SamplingSettings
from engine.sessions.run_outcome import finish_words


@pytest.mark.parametrize("over, words", [(1, "by 1 token"), (3, "by 3 tokens")])
def test_shorten_it_by_one_token_not_one_tokens(tiny_lm, monkeypatch, over, words):
    settings = SamplingSettings(max_tokens=4, seed=1)
    n = len(encode_prompt(tiny_lm.tokenizer, "hello there", settings).ids)
    monkeypatch.setattr(tiny_lm, "context_length", n + 1 - over)
    with pytest.raises(PromptTooLong) as refused:
        plan_run(tiny_lm, "hello there", settings)
    assert str(refused.value).endswith(f"shorten it {words}")


def test_finish_reasons_are_said_in_words():
    assert finish_words("length") == "stopped at max tokens"
    assert finish_words("cancelled") == "cancelled by Stop"
    assert finish_words("eos") == "ended by the model"
