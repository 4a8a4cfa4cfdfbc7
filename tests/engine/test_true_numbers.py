"""Every number the engine reports, against an independent computation: bare mlx-lm
timings, teacher-forced logprobs, the tokenizer's own split of the chat template."""

from __future__ import annotations

import time

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.models.cache import make_prompt_cache

from engine.backends.mlx.generate import generate_records
from engine.prompt import encode_prompt
from engine.settings import SamplingSettings
from tests.engine.test_real_model import collect

RAW_PROMPT = "In the old harbour town the fishermen mended their nets every morning while"


def bare_run(smollm, ids: list[int], n: int) -> tuple[float, float | None]:
    """(prefill tok/s, decode tok/s) of a plain greedy loop the way mlx-lm's
    generate_step runs it (the prompt but its last token fills the cache; the last
    token gives the first logits), stamped when each token's value is known."""
    model = smollm.model
    cache = make_prompt_cache(model)
    prompt = mx.array(ids)
    t0 = time.perf_counter()
    model.model(prompt[:-1][None], cache=cache)  # the cache only: no vocabulary head
    mx.eval([c.state for c in cache])
    y = mx.argmax(model(prompt[-1:][None], cache=cache)[0, -1])
    mx.eval(y)
    stamps = [time.perf_counter()]
    for _ in range(n - 1):
        y = mx.argmax(model(y.reshape(1, 1), cache=cache)[0, -1])
        mx.eval(y)
        stamps.append(time.perf_counter())
    decode = (n - 1) / (stamps[-1] - stamps[0]) if n > 1 else None
    return len(ids) / (stamps[0] - t0), decode


@pytest.mark.parametrize("n", [2, 3, 12])
def test_prefill_and_decode_speed_match_a_bare_loop(smollm, n):
    """Seen: a 2-token run reported 25 tok/s on a machine doing about 2.7."""
    settings = SamplingSettings(
        temperature=0, max_tokens=n, chat_template=False, prompt_cache=False
    )  # every round prefills it all
    prompt = " ".join([RAW_PROMPT] * 4)  # ~60 tokens: a prefill long enough to time well
    ids = encode_prompt(smollm.tokenizer, prompt, settings).ids
    bare_pre, bare_dec, ours_pre, ours_dec = [], [], [], []
    for i in range(4):  # alternate, and swap who goes first: drift and order hit both
        for side in ("ours", "bare") if i % 2 == 0 else ("bare", "ours"):
            if side == "ours":
                r = collect(generate_records(smollm, prompt, settings))
                assert r.done.generated_tokens == n and len(r.tokens) == n
                ours_pre.append(r.done.prefill_tps)
                ours_dec.append(r.done.decode_tps)
            else:
                p, d = bare_run(smollm, ids, n)
                bare_pre.append(p)
                bare_dec.append(d)
    # Best of the rounds: the least disturbed run of each (noise only ever slows a run).
    # On the float32 path a 60-token prefill takes ~0.5 s and a decode step ~0.1 s;
    # single runs vary by +-15% here, and on a shared CI machine the best of four has
    # come out 32% apart (ours the faster) with the same work on both sides. The error
    # this guards against was 10x, so the bound is a factor of 1.5 either way.
    assert 1 / 1.5 < max(ours_pre) / max(bare_pre) < 1.5, (ours_pre, bare_pre)
    assert 1 / 1.5 < max(ours_dec) / max(bare_dec) < 1.5, (ours_dec, bare_dec)
    # TTFT is the first token's value known, measured from the request.
    assert r.done.ttft_s == pytest.approx(r.tokens[0].elapsed_s)
    assert r.done.decode_s == pytest.approx(r.tokens[-1].elapsed_s - r.tokens[0].elapsed_s)


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
