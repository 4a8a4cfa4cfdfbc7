"""A prompt prefix's KV cache prefilled once and copied (engine/backends/mlx/prefix_cache.py):
a copy followed by the rest of a prompt gives the logits a whole prefill gives, using a
copy never changes the kept prefix, and a prompt that does not start with it starts empty."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.prefix_cache import PrefixCache, shared_prefix


def _whole(model, ids: list[int]) -> np.ndarray:
    return np.array(model(mx.array([ids]))[0].astype(mx.float32))  # (L, V)


def _after_prefix(prefix: PrefixCache, ids: list[int]) -> tuple[np.ndarray, int]:
    cache, held = prefix.cache_for(ids)
    out = prefix.model(mx.array([ids[held:]]), cache=cache)[0].astype(mx.float32)
    return np.array(out), held


def test_a_copy_then_the_rest_gives_a_whole_prefills_logits(tiny_lm):
    model = tiny_lm.model
    prefix = PrefixCache(model)
    start = [5, 17, 3, 99, 42, 8]
    prefix.fill(start)
    for rest in ([7, 7, 1], [250, 4], [11]):  # each prompt reuses the same kept prefix
        ids = start + rest
        got, held = _after_prefix(prefix, ids)
        assert held == len(start) and got.shape[0] == len(rest)
        np.testing.assert_allclose(got, _whole(model, ids)[len(start) :], atol=1e-4)


def test_decoding_on_a_copy_leaves_the_kept_prefix_as_it_was(tiny_lm):
    model = tiny_lm.model
    prefix = PrefixCache(model)
    start = [9, 8, 7, 6]
    prefix.fill(start)
    kept = [np.array(a) for c, _m in prefix._states for a in c if isinstance(a, mx.array)]
    cache, held = prefix.cache_for(start + [1])
    model(mx.array([[1]]), cache=cache)
    for token in (2, 3, 4):  # decode steps write into the copy's arrays
        model(mx.array([[token]]), cache=cache)
    after = [np.array(a) for c, _m in prefix._states for a in c if isinstance(a, mx.array)]
    assert all(np.array_equal(a, b) for a, b in zip(kept, after, strict=True))
    got, _held = _after_prefix(prefix, start + [5, 6])
    np.testing.assert_allclose(got, _whole(model, start + [5, 6])[len(start) :], atol=1e-4)


@pytest.mark.parametrize(
    "ids",
    [[9, 8, 7], [1, 2, 3, 4, 5], [9, 8, 7, 5, 5]],  # the prefix itself, another, one differing
)
def test_a_prompt_that_does_not_go_on_past_the_prefix_starts_empty(tiny_lm, ids):
    prefix = PrefixCache(tiny_lm.model)
    prefix.fill([9, 8, 7, 6])
    cache, held = prefix.cache_for(ids)
    assert held == 0 and all(c.offset == 0 for c in cache)


def test_every_question_starts_with_the_shared_prefix(smollm):
    from engine.backends.mlx.calibrate import question_ids
    from engine.lab.questions import load_questions

    start = shared_prefix(lambda text: question_ids(smollm, text))
    assert len(start) > 40  # the system prompt and the two worked examples
    text = smollm.tokenizer.decode(start)
    assert "Answer with only the answer" in text and "A cow" in text
    for q in load_questions(None)[:20]:
        assert question_ids(smollm, q.question)[: len(start)] == start
