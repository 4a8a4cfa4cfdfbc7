"""capture (engine/backends/mlx/capture.py) on a tiny random-weight llama built in
memory: its patches last only for the `with` block (the block class's `__call__` and
`mx.fast.scaled_dot_product_attention` are the very originals afterwards, after an
exception too), the pass it watches is unchanged, and what it records equals the
same numbers computed without it (the blocks run by hand, NumPy in float64)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.capture import block_classes, capture
from engine.backends.mlx.inside import attention_weights, run_pass

IDS = [3, 17, 5, 60, 2, 41, 9]


@pytest.fixture(scope="module")
def tiny():
    from mlx_lm.models import llama

    mx.random.seed(7)
    args = llama.ModelArgs.from_dict(
        {
            "model_type": "llama",
            "hidden_size": 32,
            "num_hidden_layers": 3,
            "intermediate_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "rms_norm_eps": 1e-5,
            "vocab_size": 64,
            "tie_word_embeddings": True,
        }
    )
    model = llama.Model(args)
    mx.eval(model.parameters())
    return model


def _np(a) -> np.ndarray:
    return np.array(a.astype(mx.float32), dtype=np.float64)


def _by_hand(model, ids):
    """Each block's input and output, the blocks called one by one outside any capture."""
    h = model.model.embed_tokens(mx.array(ids)[None])
    ins, outs = [], []
    for layer in model.model.layers:
        ins.append(h)
        h = layer(h, "causal")
        outs.append(h)
    return ins, outs


def _originals(model):
    return {cls: cls.__call__ for cls in block_classes(model)}, mx.fast.scaled_dot_product_attention


def test_patches_last_only_for_the_block(tiny):
    calls, sdpa = _originals(tiny)
    with capture(tiny, attention=True, hidden=True, inputs=True):
        assert mx.fast.scaled_dot_product_attention is not sdpa
        assert all(cls.__call__ is not f for cls, f in calls.items())
        tiny(mx.array(IDS)[None])
    assert mx.fast.scaled_dot_product_attention is sdpa
    assert all(cls.__call__ is f for cls, f in calls.items())
    assert all("__call__" in cls.__dict__ for cls in calls)  # its own, as before


def test_patches_are_undone_after_an_exception(tiny):
    calls, sdpa = _originals(tiny)
    with (
        pytest.raises(RuntimeError, match="inside"),
        capture(tiny, attention=True, hidden=True) as seen,
    ):
        tiny(mx.array(IDS)[None])
        raise RuntimeError("inside the block")
    assert len(seen.hidden) == 3 and len(seen.queries) == 3
    assert mx.fast.scaled_dot_product_attention is sdpa
    assert all(cls.__call__ is f for cls, f in calls.items())
    # and a capture after it works and records one pass, not two
    with capture(tiny, hidden=True) as again:
        tiny(mx.array(IDS)[None])
    assert len(again.hidden) == 3 and again.queries == [] and again.inputs == []


def test_only_what_is_asked_is_patched(tiny):
    calls, sdpa = _originals(tiny)
    with capture(tiny, attention=True) as seen:
        assert all(cls.__call__ is f for cls, f in calls.items())
        tiny(mx.array(IDS)[None])
    assert len(seen.queries) == 3 and seen.hidden == []
    with capture(tiny, hidden=True):
        assert mx.fast.scaled_dot_product_attention is sdpa


def test_the_pass_is_unchanged_and_the_blocks_equal_a_pass_by_hand(tiny):
    x = mx.array(IDS)[None]
    plain = _np(tiny(x))
    with capture(tiny, attention=True, hidden=True, inputs=True) as seen:
        watched = _np(tiny(x))
    assert np.array_equal(watched, plain)
    ins, outs = _by_hand(tiny, IDS)
    assert len(seen.hidden) == len(seen.inputs) == len(seen.calls) == 3
    for got, want in zip(seen.hidden, outs, strict=True):
        assert np.allclose(_np(got), _np(want), atol=1e-5)
    for got, want in zip(seen.inputs, ins, strict=True):
        assert np.allclose(_np(got), _np(want), atol=1e-5)
    # the last block's output, normed, is what the model's body returns
    assert np.allclose(_np(tiny.model.norm(seen.hidden[-1])), _np(tiny.model(x)), atol=1e-5)
    # the block's mask arrived among its call arguments
    args, kw = seen.calls[0]
    assert "causal" in (*args, *kw.values())


def test_attention_equals_numpy(tiny):
    p = run_pass(tiny, IDS)
    ins, _outs = _by_hand(tiny, IDS)
    t = len(IDS)
    for layer, (block, x) in enumerate(zip(tiny.model.layers, ins, strict=True)):
        attn = block.self_attn
        h = block.input_layernorm(x)
        q = attn.rope(attn.q_proj(h).reshape(1, t, 4, -1).transpose(0, 2, 1, 3))
        k = attn.rope(attn.k_proj(h).reshape(1, t, 2, -1).transpose(0, 2, 1, 3))
        assert np.allclose(_np(p.queries[layer]), _np(q), atol=1e-5)
        assert np.allclose(_np(p.keys[layer]), _np(k), atol=1e-5)
        assert p.scales[layer] == pytest.approx(attn.scale)
        qn, kn = _np(q)[0], np.repeat(_np(k)[0], 2, axis=0)  # grouped-query heads
        scores = qn @ kn.transpose(0, 2, 1) * attn.scale
        scores[:, np.triu(np.ones((t, t), bool), 1)] = -np.inf
        want = np.exp(scores - scores.max(-1, keepdims=True))
        want /= want.sum(-1, keepdims=True)
        assert np.allclose(attention_weights(p, layer), want, atol=1e-5)
    assert np.allclose(_np(p.logits), _np(tiny(mx.array(IDS)[None])[0]), atol=1e-5)
