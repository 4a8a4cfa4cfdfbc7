"""Speculative decoding on the real default model with a re-quantized draft:
greedy output identical to the target's, counts that add up, and acceptance
recomputed independently from the two models' own greedy choices (no caches)."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest

from engine.backends.mlx.lab_speculative import plain_greedy, speculative_greedy


@pytest.fixture(scope="module")
def models(default_model_path, smollm):
    from engine.backends.mlx.loader import load_model

    draft = load_model(default_model_path, prefer="speed")[0].model
    nn.quantize(draft, group_size=64, bits=4)
    return smollm, draft


def _greedy_no_cache(model, ids: list[int], n: int) -> list[int]:
    out = []
    for _ in range(n):
        out.append(int(mx.argmax(model(mx.array(ids + out)[None])[0, -1]).item()))
    return out


@pytest.mark.parametrize("k", [2])
def test_speculative_equals_the_targets_greedy_output(models, k):
    lm, draft = models
    ids = lm.tokenizer.encode("List three colours:")
    eos = set(lm.tokenizer.eos_token_ids)
    # 8 tokens: three rounds here, accepted and rejected drafts (the replay below runs
    # the draft without a cache, its cost growing with the square of the length)
    plain, _s = plain_greedy(lm.model, ids, 8, eos)
    spec = speculative_greedy(lm.model, draft, ids, k, 8, eos)
    assert spec.tokens == plain
    assert spec.accepted + sum(r.rejected for r in spec.rounds) == spec.drafted
    assert all(len(r.drafted) <= k for r in spec.rounds)
    # Replay each round without any cache: the draft's greedy proposals from the
    # prefix, and how many of them the target's greedy output agrees with.
    pos = 1  # the first token comes from the target's prefill pass
    for r in spec.rounds:
        prefix = ids + spec.tokens[:pos]
        assert r.drafted == _greedy_no_cache(draft, prefix, len(r.drafted))
        want = spec.tokens[pos : pos + len(r.drafted)]
        agree = 0
        while agree < len(r.drafted) and agree < len(want) and r.drafted[agree] == want[agree]:
            agree += 1
        assert r.accepted == agree
        pos += r.accepted + 1
