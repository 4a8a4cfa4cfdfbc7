"""Branching on the real model: a forced token's continuation equals a cold,
teacher-forced pass of bare mlx-lm over prompt + first K tokens + the forced token
(reusing prompt + K tokens of KV cache), a sampled branch equals a cold run of the
same ids and seed, and a text that is not one token is refused with how it tokenizes."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.generate import generate_records
from engine.backends.mlx.prompt_reuse import forget
from engine.errors import SettingsError
from engine.run.continuation import Continuation, continuation_from, own_choices, with_prefix
from engine.run.prompt import encode_prompt
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings

PROMPT = "Name a colour of the sky."


def collect(records) -> RunResult:
    r = RunResult()
    for rec in records:
        r.add(rec)
    return r


def _teacher_forced(lm, ids: list[int]) -> np.ndarray:
    """Bare mlx-lm, one cold forward pass: float64 log-softmax at every position."""
    logits = lm.model(mx.array(ids)[None])[0].astype(mx.float32)
    x = np.array(logits, dtype=np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def test_forced_branch_equals_a_cold_teacher_forced_pass(smollm):
    s = SamplingSettings(temperature=0, max_tokens=7, seed=0)
    parent = collect(generate_records(smollm, PROMPT, s))
    k = 3
    alt = parent.tokens[k].top[1]  # the model's second choice at step k
    cont = continuation_from(parent.tokens, k, alt.token_id)
    branch = collect(
        with_prefix(parent.tokens, k, generate_records(smollm, PROMPT, s, lambda: False, cont))
    )
    ids = encode_prompt(smollm.tokenizer, PROMPT, s).ids
    n_prompt = len(ids)
    assert branch.done.cached_tokens == n_prompt + k  # prompt + K reused, not recomputed
    assert branch.done.branch_step == k and branch.done.prompt_tokens == n_prompt
    assert [t.step for t in branch.tokens] == list(range(len(branch.tokens)))
    assert [t.token_id for t in branch.tokens[:k]] == [t.token_id for t in parent.tokens[:k]]
    forced = branch.tokens[k]
    assert forced.forced and forced.token_id == alt.token_id
    assert forced.logprob == pytest.approx(alt.logprob, abs=1e-6)
    after = branch.tokens[k + 1 :]
    assert len(after) >= 2 and not any(t.forced for t in after)
    answer = [t.token_id for t in parent.tokens[:k]] + [alt.token_id]
    lp = _teacher_forced(smollm, ids + answer + [t.token_id for t in after])
    for i, t in enumerate(after):
        row = lp[n_prompt + k + i]  # predicts answer step k + 1 + i
        assert t.token_id == int(np.argmax(row))  # greedy, teacher-forced
        # one whole-sequence pass vs token-by-token decode: 4-bit kernels differ by
        # ~1-2e-4 (a plain run shows the same against this pass)
        assert t.logprob == pytest.approx(row[t.token_id], abs=3e-4)
        p = np.exp(row)
        assert t.entropy == pytest.approx(float(-(p * row).sum()), abs=3e-4)
    forget(smollm)  # a cold run of the same ids: prompt + K + the forced token prefilled
    cold = collect(generate_records(smollm, PROMPT, s, lambda: False, cont))
    assert cold.done.cached_tokens == 0
    assert [t.token_id for t in cold.tokens] == [t.token_id for t in branch.tokens[k:]]
    for a, b in zip(cold.tokens[1:], after, strict=True):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
        assert a.entropy == pytest.approx(b.entropy, abs=1e-4)
    assert branch.done.text == "".join(t.text for t in branch.tokens)
    assert own_choices(branch.tokens) == [t for t in branch.tokens if not t.forced]


def test_forced_token_outside_the_candidates_is_computed(smollm):
    s = SamplingSettings(temperature=0, max_tokens=4, seed=0, top_n=5)
    parent = collect(generate_records(smollm, PROMPT, s))
    k = 1
    shown = {t.token_id for t in parent.tokens[k].top}
    token = next(i for i in range(1000, 2000) if i not in shown)
    cont = continuation_from(parent.tokens, k, token)
    branch = collect(generate_records(smollm, PROMPT, s, lambda: False, cont))
    ids = encode_prompt(smollm.tokenizer, PROMPT, s).ids
    lp = _teacher_forced(smollm, ids + [parent.tokens[0].token_id])
    forced = branch.tokens[0]
    assert forced.step == k and forced.forced and forced.token_id == token
    assert forced.logprob == pytest.approx(lp[-1][token], abs=3e-4)  # recomputed
    assert branch.done.cached_tokens == len(ids) + k - 1  # the step before was fed again


def test_sampled_branch_equals_a_cold_run_with_the_same_seed(smollm):
    s = SamplingSettings(temperature=0.9, max_tokens=5, seed=11)
    parent = collect(generate_records(smollm, PROMPT, s))
    cont = continuation_from(parent.tokens, 2)
    warm = collect(generate_records(smollm, PROMPT, s, lambda: False, cont))
    forget(smollm)
    cold = collect(generate_records(smollm, PROMPT, s, lambda: False, cont))
    assert warm.done.cached_tokens > cold.done.cached_tokens == 0
    assert [t.step for t in warm.tokens] == [2, 3, 4, 5, 6][: len(warm.tokens)]
    assert [t.token_id for t in warm.tokens] == [t.token_id for t in cold.tokens]
    for a, b in zip(warm.tokens, cold.tokens, strict=True):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)


def test_a_text_that_is_not_one_token_says_how_it_tokenizes(smollm):
    s = SamplingSettings(temperature=0, max_tokens=2, seed=0)
    parent = collect(generate_records(smollm, PROMPT, s))
    one = parent.tokens[0].top[0]
    cont = continuation_from(parent.tokens, 0, text=one.text)
    branch = collect(generate_records(smollm, PROMPT, s, lambda: False, cont))
    assert branch.tokens[0].token_id == one.token_id and branch.tokens[0].forced
    bad = continuation_from(parent.tokens, 0, text=" antidisestablishmentarianism")
    with pytest.raises(SettingsError, match="not one token.*tokenizes as"):
        list(generate_records(smollm, PROMPT, s, lambda: False, bad))
    with pytest.raises(SettingsError, match="outside the answer"):
        continuation_from(parent.tokens, 99, one.token_id)
    assert Continuation.from_dict(cont.to_dict()) == cont
