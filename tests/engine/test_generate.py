"""The generation loop on a tiny random-weight model: exact, fast checks."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.generate import generate_records
from engine.errors import SettingsError
from engine.run.prompt import encode_prompt
from engine.run.records import DoneRecord, PrefillRecord, TokenRecord
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings
from tests.tiny_model import TINY_CONTEXT

PROMPT = "hello there"


def run(lm, prompt=PROMPT, stop_after=None, **kw) -> RunResult:
    settings = SamplingSettings(**{"max_tokens": 12, **kw})
    result = RunResult()
    tokens_seen = 0

    def should_stop():
        return stop_after is not None and tokens_seen >= stop_after

    for record in generate_records(lm, prompt, settings, should_stop):
        result.add(record)
        tokens_seen = len(result.tokens)
    return result


def test_same_seed_same_tokens_different_seed_different(tiny_lm):
    a = run(tiny_lm, temperature=1.0, seed=11)
    b = run(tiny_lm, temperature=1.0, seed=11)
    c = run(tiny_lm, temperature=1.0, seed=12)
    ids = lambda r: [t.token_id for t in r.tokens]  # noqa: E731
    assert ids(a) == ids(b)
    assert ids(a) != ids(c)
    assert a.done.seed == 11


def test_chosen_logprobs_equal_a_full_forward_pass(tiny_lm):
    """Independent check: one forward pass over prompt+output, log_softmax."""
    r = run(tiny_lm, temperature=0.0)
    prompt_ids = encode_prompt(tiny_lm.tokenizer, PROMPT, SamplingSettings()).ids
    seq = prompt_ids + [t.token_id for t in r.tokens]
    logits = tiny_lm.model(mx.array(seq)[None])[0].astype(mx.float32)  # (L, V)
    lp = np.array(logits - mx.logsumexp(logits, axis=-1, keepdims=True))
    n = len(prompt_ids)
    for t in r.tokens:
        row = lp[n - 1 + t.step]
        assert t.token_id == int(np.argmax(row))  # greedy
        assert t.logprob == pytest.approx(float(row[t.token_id]), abs=2e-3)
        assert [c.token_id for c in t.top] == list(np.argsort(-row)[: len(t.top)])
        p = np.exp(row)
        assert t.entropy == pytest.approx(float(-(p * row).sum()), abs=2e-3)


def test_context_accounting_and_counts(tiny_lm):
    r = run(tiny_lm, temperature=0.0, max_tokens=5)
    n_prompt = r.done.prompt_tokens
    assert n_prompt == len(encode_prompt(tiny_lm.tokenizer, PROMPT, SamplingSettings()).ids)
    assert [t.context_tokens for t in r.tokens] == [n_prompt + i + 1 for i in range(5)]
    assert [t.step for t in r.tokens] == list(range(5))
    assert r.done.generated_tokens == 5
    assert r.done.finish_reason == "length"
    assert r.done.context_length == TINY_CONTEXT
    assert r.done.text == r.text
    # 2 layers x (K+V) x 2 kv heads x 8 dims x float32, per token fed to the model
    # (the prompt and all outputs but the last).
    assert r.done.kv_cache_bytes == 2 * 2 * 2 * 8 * 4 * (n_prompt + 4)
    assert r.prefill == PrefillRecord(n_prompt, n_prompt, r.prefill.elapsed_s)


def test_output_is_cut_at_the_context_window(tiny_lm):
    r = run(tiny_lm, temperature=0.0, max_tokens=500)
    assert r.done.prompt_tokens + r.done.generated_tokens == TINY_CONTEXT
    assert r.done.finish_reason == "length"


def test_prompt_longer_than_context_is_refused(tiny_lm):
    with pytest.raises(SettingsError, match="context window is 64"):
        list(generate_records(tiny_lm, "x" * 100, SamplingSettings()))


def test_empty_prompt_is_refused(tiny_lm):
    with pytest.raises(SettingsError, match="empty"):
        list(generate_records(tiny_lm, "   ", SamplingSettings()))


def test_cancel_between_tokens_keeps_partial_output(tiny_lm):
    r = run(tiny_lm, temperature=0.0, stop_after=3)
    full = run(tiny_lm, temperature=0.0)
    assert r.done.finish_reason == "cancelled"
    assert len(r.tokens) == 3
    assert r.done.generated_tokens == 3
    assert r.text == "".join(t.text for t in full.tokens[:3])


def test_cancel_between_prefill_chunks(tiny_lm):
    calls = []
    settings = SamplingSettings(max_tokens=4, prefill_chunk=4)
    records = []
    for rec in generate_records(tiny_lm, "a longer prompt text", settings, lambda: calls):
        records.append(rec)
        if isinstance(rec, PrefillRecord) and rec.processed >= 4:
            calls.append(1)
    done = records[-1]
    assert isinstance(done, DoneRecord) and done.finish_reason == "cancelled"
    assert not any(isinstance(r, TokenRecord) for r in records)
    assert max(r.processed for r in records if isinstance(r, PrefillRecord)) == 4


def test_stop_string_ends_the_run_before_it(tiny_lm):
    full = run(tiny_lm, temperature=0.0)
    pieces = [t.text for t in full.tokens]
    k = next(i for i, p in enumerate(pieces) if i >= 2 and p.strip())
    stop = pieces[k]
    r = run(tiny_lm, temperature=0.0, stop=(stop,))
    assert r.done.finish_reason == "stop_string"
    expected = "".join(pieces)
    assert r.done.text == expected[: expected.index(stop)]
    assert stop not in r.done.text


def test_raw_mode_skips_the_chat_template(tiny_lm):
    chat = encode_prompt(tiny_lm.tokenizer, PROMPT, SamplingSettings())
    raw = encode_prompt(tiny_lm.tokenizer, PROMPT, SamplingSettings(chat_template=False))
    assert raw.ids == tiny_lm.tokenizer.encode(PROMPT)
    assert len(chat.ids) > len(raw.ids)
    with_system = encode_prompt(
        tiny_lm.tokenizer, PROMPT, SamplingSettings(system_prompt="Be brief.")
    )
    # "<|im_start|>" + "system\nBe brief." + "<|im_end|>" + "\n"
    assert with_system.system_tokens == 1 + len("system\nBe brief.") + 1 + 1
