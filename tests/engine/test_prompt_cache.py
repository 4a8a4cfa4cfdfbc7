"""Reusing the previous run's KV cache: the cached run's tokens and logprobs equal
an uncached run's, time to first token drops (a ratio in the same test), and
only the common token prefix is reused."""

from __future__ import annotations

import pytest

from engine.backends.mlx.generate import generate_records
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings

SYSTEM = (
    "You are a meticulous assistant for a museum of natural history. Answer in one "
    "short sentence, use plain words, and never invent facts you are unsure of. "
) * 3


def collect(records) -> RunResult:
    r = RunResult()
    for rec in records:
        r.add(rec)
    return r


def _settings(prompt_cache=True):
    return SamplingSettings(
        temperature=0, max_tokens=6, system_prompt=SYSTEM, seed=0, prompt_cache=prompt_cache
    )


def test_cached_run_equals_a_cold_run_and_is_faster(smollm):
    cold_settings = _settings(prompt_cache=False)
    collect(generate_records(smollm, "Warm up.", cold_settings))
    ttft_cold, ttft_warm = [], []
    for question in ("What is a fossil?", "What is amber?"):
        cold = collect(generate_records(smollm, question, cold_settings))
        collect(generate_records(smollm, "Anything.", _settings()))  # leaves the system prompt
        warm = collect(generate_records(smollm, question, _settings()))
        n_system = warm.done.system_tokens
        assert warm.done.cached_tokens >= n_system > 50  # the shared system prompt
        assert cold.done.cached_tokens == 0
        assert [t.token_id for t in warm.tokens] == [t.token_id for t in cold.tokens]
        for a, b in zip(warm.tokens, cold.tokens, strict=True):
            assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
            assert a.entropy == pytest.approx(b.entropy, abs=1e-4)
        ttft_cold.append(cold.done.ttft_s)
        ttft_warm.append(warm.done.ttft_s)
    assert min(ttft_warm) < min(ttft_cold)  # a ratio in one test, not a time


def test_the_engine_default_is_cold(smollm):
    assert SamplingSettings().prompt_cache is False  # exact, comparable runs unless asked


def test_only_the_common_prefix_is_reused(smollm):
    s = SamplingSettings(
        temperature=0, max_tokens=3, chat_template=False, seed=0, prompt_cache=True
    )
    first = collect(generate_records(smollm, "One two three four five six", s))
    same = collect(generate_records(smollm, "One two three four five six", s))
    assert same.done.cached_tokens == first.done.prompt_tokens - 1  # the last is recomputed
    assert [t.token_id for t in same.tokens] == [t.token_id for t in first.tokens]
    changed = collect(generate_records(smollm, "One two three FOUR five six", s))
    ids = smollm.tokenizer.encode("One two three FOUR five six")
    old = smollm.tokenizer.encode("One two three four five six")
    common = next(i for i, (a, b) in enumerate(zip(ids, old, strict=False)) if a != b)
    assert changed.done.cached_tokens == common
    off = collect(
        generate_records(smollm, "One two three FOUR five six", s.with_(prompt_cache=False))
    )
    assert off.done.cached_tokens == 0
    assert [t.token_id for t in off.tokens] == [t.token_id for t in changed.tokens]
