"""The prompt-cache benchmark: a conversation's second turn, cold and cached."""

from __future__ import annotations

import pytest

from engine.backends.mlx.lab_cache import LONG_SYSTEM, TURNS, cache_experiment
from engine.run.prompt import encode_prompt
from engine.run.settings import SamplingSettings


def test_cached_turn_matches_cold_and_the_ratio_is_recomputable(smollm):
    out = cache_experiment(smollm, tokens=3, rounds=1)
    assert out["same_tokens"] and out["max_logprob_difference"] < 1e-4
    assert out["ratio"] == pytest.approx(out["cold_ttft_s"] / out["cached_ttft_s"])
    assert out["cold_ttft_s"] == min(out["cold_ttfts"])
    # Reused: the system prompt and turn 1 (prompt and answer), not turn 2's message.
    turn1 = encode_prompt(smollm.tokenizer, TURNS[0], SamplingSettings(system_prompt=LONG_SYSTEM))
    assert len(turn1.ids) <= out["cached_tokens"] < out["prompt_tokens"]
