"""Every number the engine reports, against an independent computation: the timings
against the stamps they come from, teacher-forced logprobs, the tokenizer's own split
of the chat template."""

from __future__ import annotations

import time

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.generate import generate_records
from engine.run.prompt import encode_prompt
from engine.run.settings import SamplingSettings
from tests.engine.test_real_model import collect

RAW_PROMPT = "In the old harbour town the fishermen mended their nets every morning while"


@pytest.mark.parametrize("n", [2, 3, 12])
def test_prefill_and_decode_figures_come_from_the_stamps(smollm, n):
    """Seen: a 2-token run reported 25 tok/s on a machine doing about 2.7.

    Each figure of the done record is checked against the token stamps it must come
    from, and each stamp against the clock, with no speed bound: a rate on a shared
    machine is noise. The rates against bare mlx-lm are benchmarks
    (`logitscope bench`, scripts/bench_same_weights.py; BENCHMARKS.md)."""
    settings = SamplingSettings(
        temperature=0, max_tokens=n, chat_template=False, prompt_cache=False
    )  # every run prefills it all
    prompt = " ".join([RAW_PROMPT] * 4)  # ~60 tokens
    ids = encode_prompt(smollm.tokenizer, prompt, settings).ids
    records, arrived = [], []
    t0 = time.perf_counter()  # before the engine's own clock starts
    for record in generate_records(smollm, prompt, settings):
        records.append(record)
        if record.type == "token":
            arrived.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    r = collect(records)
    d = r.done
    assert d.generated_tokens == n and len(r.tokens) == n and d.prompt_tokens == len(ids)
    stamps = [t.elapsed_s for t in r.tokens]
    assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))  # one per step
    assert all(s <= a for s, a in zip(stamps, arrived, strict=True))  # none from the future
    assert stamps[-1] <= d.elapsed_s <= wall
    # TTFT is the first token's value known, measured from the request.
    assert d.ttft_s == pytest.approx(stamps[0])
    assert d.decode_s == pytest.approx(stamps[-1] - stamps[0])
    assert d.decode_tps == pytest.approx((n - 1) / (stamps[-1] - stamps[0]))
    # Prefill: every prompt token computed (no cache), over the time up to the first token.
    assert 0 < d.prefill_s <= d.ttft_s
    assert d.prefill_tps == pytest.approx(len(ids) / d.prefill_s)


def test_raw_mode_keeps_the_first_tokens_leading_space(smollm):
    settings = SamplingSettings(temperature=0, max_tokens=4, chat_template=False)
    r = collect(generate_records(smollm, "The capital of France is", settings))
    first = smollm.tokenizer.decode([r.tokens[0].token_id])
    assert first.startswith(" ") and r.tokens[0].text == first
    assert r.done.text.startswith(" ")
    assert r.done.text == "".join(t.text for t in r.tokens)


def test_end_of_sequence_step_is_recorded_with_its_true_logprob(smollm):
    settings = SamplingSettings(temperature=0, max_tokens=40)
    prompt = "What is the capital of France?"
    r = collect(generate_records(smollm, prompt, settings))
    assert r.done.finish_reason == "eos" and r.tokens[-1].eos and r.tokens[-1].text == ""
    assert r.tokens[-1].token_id in smollm.tokenizer.eos_token_ids
    assert r.done.generated_tokens == len(r.tokens) - 1
    # Teacher-forced: the logprob of stopping where it stopped.
    ids = encode_prompt(smollm.tokenizer, prompt, settings).ids + [t.token_id for t in r.tokens]
    logits = smollm.model(mx.array(ids[:-1])[None])[0, -1].astype(mx.float32)
    lp = np.array(logits - mx.logsumexp(logits))
    assert r.tokens[-1].logprob == pytest.approx(float(lp[ids[-1]]), abs=1e-3)


def test_a_stop_string_is_told_apart_from_eos(smollm):
    settings = SamplingSettings(temperature=0, max_tokens=40, stop=("Paris",))
    r = collect(generate_records(smollm, "What is the capital of France?", settings))
    assert r.done.finish_reason == "stop_string" and "Paris" not in r.done.text


@pytest.mark.parametrize("system", [None, "You answer in one word."])
def test_system_tokens_are_the_templates_own_system_part(smollm, system):
    """Seen: with no system prompt SmolLM2's template inserts a 21-token system block
    that was counted as prompt."""
    tok = smollm.tokenizer
    settings = SamplingSettings(system_prompt=system, max_tokens=1)
    user = "Name a colour."
    head = [{"role": "system", "content": system}] if system else []
    full = tok.apply_chat_template(
        [*head, {"role": "user", "content": user}], add_generation_prompt=True, tokenize=False
    )
    marker = "<|im_start|>user"
    want = len(tok.encode(full[: full.index(marker)], add_special_tokens=False))
    r = collect(generate_records(smollm, user, settings))
    assert r.done.system_tokens == want and want >= 5
    if system is None:
        assert want == 21
    assert r.prefill.system_tokens == want


def test_sampled_from_probability_of_every_candidate(smollm):
    """Seen: candidates missing from the sampled top list were drawn at 0."""
    settings = SamplingSettings(
        temperature=0.7, top_k=3, repetition_penalty=1.3, seed=4, max_tokens=6, top_n=8
    )
    prompt = "List three fruits."
    r = collect(generate_records(smollm, prompt, settings))
    ids = encode_prompt(smollm.tokenizer, prompt, settings).ids
    for t in r.tokens:
        assert len(t.sampled_probs) == len(t.top)
        # Independent: mlx-lm's penalty and top-k, then softmax(x / T), in float64.
        logits = np.array(smollm.model(mx.array(ids)[None])[0, -1].astype(mx.float32), np.float64)
        recent = ids[-20:]
        for i in set(recent):
            logits[i] = logits[i] * 1.3 if logits[i] < 0 else logits[i] / 1.3
        lp = logits - np.logaddexp.reduce(logits)
        keep = np.argsort(-lp)[:3]
        masked = np.full_like(lp, -np.inf)
        masked[keep] = lp[keep] / 0.7
        p = np.exp(masked - np.logaddexp.reduce(masked[keep]))
        got = dict(zip([c.token_id for c in t.top], t.sampled_probs, strict=True))
        for tid, prob in got.items():
            assert prob == pytest.approx(p[tid], abs=2e-3)
        assert t.sampled_prob_of(t.token_id) == pytest.approx(p[t.token_id], abs=2e-3)
        ids = ids + [t.token_id]
