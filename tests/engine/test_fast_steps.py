"""Fast steps (the near-free model: SmolLM2's vocabulary, one layer of width 64,
~3 ms a step here) take the pipelined path of engine/backends/mlx/decode.py: the
next step is queued before the current one is read. Its numbers must stay true:
the same greedy tokens and log-probabilities as bare mlx-lm, each token stamped once,
in order, when read, the done record's TTFT and rate derived from those stamps, and a
whole run's host statistics equal to the same steps computed inline. (The rate against
mlx-lm's own loop is a benchmark, not a test: scripts/bench_fast_steps.py.)"""

from __future__ import annotations

import time

import numpy as np
import pytest

from engine.backends.mlx.bench import bare_decode
from engine.backends.mlx.generate import generate_records
from engine.run.chat_template import apply
from engine.run.settings import SamplingSettings
from tests.engine.test_real_model import collect

PROMPT = "Write a long story about a dragon who learns to bake bread."


@pytest.fixture(scope="module")
def near_free(tmp_path_factory, default_model_path):
    from engine.backends.mlx.loader import load_model
    from engine.backends.mlx.synthetic import build_near_free_model

    folder = build_near_free_model(tmp_path_factory.mktemp("nf") / "near-free", default_model_path)
    lm, _info, _status = load_model(folder, prefer="speed")  # pinned: not measured
    return lm


@pytest.mark.parametrize("n", [3, 60])
def test_fast_steps_are_stamped_as_they_are_read(near_free, n):
    """Each token's stamp, and the figures the done record derives from the stamps.

    No speed is asserted: on a shared machine a rate is noise. How the engine's rate
    compares with bare mlx-lm's is measured by scripts/bench_fast_steps.py (and
    `logitscope bench --synthetic`), recorded in BENCHMARKS.md.
    """
    lm = near_free
    settings = SamplingSettings(temperature=0, max_tokens=n, prompt_cache=False)
    text = apply(lm.tokenizer, [{"role": "user", "content": PROMPT}], True)
    records, arrived = [], []  # arrived: when each token record reached us
    t0 = time.perf_counter()  # before the engine's own clock starts
    for record in generate_records(lm, PROMPT, settings):
        records.append(record)
        if record.type == "token":
            arrived.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    r = collect(records)
    _rate, ids = bare_decode(lm.model, lm.tokenizer, text, n)
    assert [t.token_id for t in r.tokens] == ids  # the same greedy tokens
    assert [t.step for t in r.tokens] == list(range(n)) and r.done.generated_tokens == n
    assert [t.context_tokens for t in r.tokens] == [r.done.prompt_tokens + i + 1 for i in range(n)]
    stamps = [t.elapsed_s for t in r.tokens]
    assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))  # one stamp per step
    assert all(s <= a for s, a in zip(stamps, arrived, strict=True))  # none from the future
    assert stamps[-1] <= r.done.elapsed_s <= wall
    # Each latency is the gap since the step before (the first: since the request).
    gaps = [stamps[0]] + [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert [t.latency_s for t in r.tokens] == pytest.approx(gaps)
    prefill = [x for x in records if x.type == "prefill"]
    assert [x.elapsed_s for x in prefill] == sorted(x.elapsed_s for x in prefill)
    assert prefill[-1].processed == prefill[-1].total and prefill[-1].elapsed_s <= stamps[0]
    # The done record's figures come from those stamps and nothing else.
    assert r.done.ttft_s == pytest.approx(stamps[0])
    assert r.done.decode_s == pytest.approx(stamps[-1] - stamps[0])
    assert r.done.decode_tps == pytest.approx((n - 1) / (stamps[-1] - stamps[0]))


def test_pipelined_run_numbers_equal_inline_ones(near_free):
    """Each record of a fast run against its step recomputed alone from the same
    prefix: the chosen token's log-probability, entropy and top candidates."""
    import mlx.core as mx

    from engine.run.prompt import encode_prompt

    lm = near_free
    settings = SamplingSettings(temperature=0, max_tokens=12, prompt_cache=False)
    r = collect(generate_records(lm, PROMPT, settings))
    ids = encode_prompt(lm.tokenizer, PROMPT, settings).ids + [t.token_id for t in r.tokens]
    logits = lm.model(mx.array(ids[:-1])[None])[0].astype(mx.float32)
    lp = np.array(logits - mx.logsumexp(logits, axis=-1, keepdims=True), dtype=np.float64)
    n_prompt = len(ids) - len(r.tokens)
    for i, t in enumerate(r.tokens):
        row = lp[n_prompt - 1 + i]
        assert t.logprob == pytest.approx(row[t.token_id], abs=1e-4)
        p = np.exp(row)
        assert t.entropy == pytest.approx(float(-(p * row).sum()), abs=1e-4)
        assert [c.token_id for c in t.top[:3]] == np.argsort(-row, kind="stable")[:3].tolist()


@pytest.mark.parametrize("model", ["smollm", "near_free"])
def test_the_step_built_after_the_last_token_never_counts(model, request):
    """The next step is built (and, where steps are fast, computed) before the current
    one is read; a run that ends there takes it back: the KV cache holds the prompt
    and every answer token but the last, as a run that decoded one step at a time."""
    lm = request.getfixturevalue(model)
    settings = SamplingSettings(temperature=0, max_tokens=40)
    stop_after = 8 if model == "near_free" else None  # a random model never says EOS
    seen = []

    def should_stop() -> bool:
        return stop_after is not None and len(seen) >= stop_after

    r = None
    records = []
    for record in generate_records(lm, "What is the capital of France?", settings, should_stop):
        records.append(record)
        if record.type == "token":
            seen.append(record)
    r = records[-1]
    assert r.finish_reason == ("eos" if stop_after is None else "cancelled")
    assert r.kv_cache_tokens == r.prompt_tokens + len(seen) - 1
