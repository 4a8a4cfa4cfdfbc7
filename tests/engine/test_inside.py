"""Inside the model on the real default model: attention weights and the logit
lens against independent NumPy computations (float64), the token explorer
against each tokenizer's own encode, the hardware timeline from a run's own
timings, and `logitscope inspect --json` against the same numbers."""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.inside import attention_weights, logit_lens, run_pass
from tests.engine.test_cli import cli

SENTENCE = "The cat sat on the mat because it was warm"


def _np(a) -> np.ndarray:
    return np.array(a.astype(mx.float32), dtype=np.float64)


def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope_traditional(x, theta):
    """mlx's RoPE with traditional=True: rotate (x[2i], x[2i+1]) by pos * theta^(-2i/d)."""
    t, d = x.shape[-2:]
    freqs = theta ** (-np.arange(0, d, 2) / d)
    angle = np.arange(t)[:, None] * freqs[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


@pytest.fixture(scope="module")
def sentence_pass(smollm):
    ids = smollm.tokenizer.encode(SENTENCE)
    return ids, run_pass(smollm.model, ids)


@pytest.mark.parametrize("layer", [0, 15, 29])
def test_attention_equals_an_independent_numpy_computation(smollm, sentence_pass, layer):
    ids, p = sentence_pass
    args = smollm.model.args
    heads, kv, d = args.num_attention_heads, args.num_key_value_heads, args.head_dim
    block = smollm.model.model.layers[layer]
    if layer == 0:
        h = _np(smollm.model.model.embed_tokens(mx.array(ids)))
    else:
        h = _np(p.hidden[layer - 1][0])
    x = _rms(h, _np(block.input_layernorm.weight), args.rms_norm_eps)
    q = x @ _np(block.self_attn.q_proj.weight).T
    k = x @ _np(block.self_attn.k_proj.weight).T
    q = q.reshape(len(ids), heads, d).transpose(1, 0, 2)
    k = k.reshape(len(ids), kv, d).transpose(1, 0, 2)
    q, k = _rope_traditional(q, args.rope_theta), _rope_traditional(k, args.rope_theta)
    k = np.repeat(k, heads // kv, axis=0)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    scores[:, np.triu(np.ones((len(ids), len(ids)), bool), 1)] = -np.inf
    want = np.exp(scores - scores.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    got = attention_weights(p, layer)
    assert got.shape == (heads, len(ids), len(ids))
    assert np.abs(got - want).max() < 1e-4
    assert np.allclose(got.sum(-1), 1.0, atol=1e-5)
    assert np.triu(got, 1).max() == 0.0  # nothing attends to the future


def test_lens_last_layer_is_the_models_own_distribution(smollm, sentence_pass):
    ids, p = sentence_pass
    rows = logit_lens(smollm.model, p, len(ids) - 1, top_k=5, chosen=int(ids[-1]))
    assert len(rows) == smollm.model.args.num_hidden_layers
    own = np.array(mx.softmax(smollm.model(mx.array(ids)[None])[0, -1].astype(mx.float32)))
    for tid, prob in rows[-1]["top"]:
        assert prob == pytest.approx(float(own[tid]), abs=1e-4)
    assert [t for t, _ in rows[-1]["top"]] == list(np.argsort(-own)[:5])


@pytest.mark.parametrize("layer", [0, 10, 20])
def test_lens_earlier_layers_equal_numpy(smollm, sentence_pass, layer):
    ids, p = sentence_pass
    rows = logit_lens(smollm.model, p, len(ids) - 1, top_k=5, chosen=int(ids[2]))
    inner = smollm.model.model
    x = _rms(_np(p.hidden[layer][0, -1]), _np(inner.norm.weight), smollm.model.args.rms_norm_eps)
    logits = _np(inner.embed_tokens.weight) @ x  # tied embeddings
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    row = rows[layer]
    assert [t for t, _ in row["top"]] == list(np.argsort(-probs)[:5])
    for tid, prob in row["top"]:
        assert prob == pytest.approx(probs[tid], abs=1e-4)
    assert row["chosen_prob"] == pytest.approx(probs[ids[2]], abs=1e-4)
    assert row["chosen_rank"] == int((probs > probs[ids[2]]).sum()) + 1


def test_token_explorer_counts_and_spans(default_model_path, gemma_path, bare_tokenizer):
    from engine.models.light_tokenizer import LightTokenizer
    from engine.models.token_explorer import SAMPLES, economy, split

    for folder in (default_model_path, gemma_path):
        light, ref = LightTokenizer(folder), bare_tokenizer(folder)
        table = economy(light)
        for lang, text in SAMPLES.items():
            ids = ref._tokenizer(text, add_special_tokens=False).input_ids
            assert table[lang]["tokens"] == len(ids), (folder.name, lang)
            spans = split(light, text)
            assert [s.token_id for s in spans] == ids
            assert "".join(s.text for s in spans) == text  # the input, exactly
            for s in spans:  # a token that is part of a character shows its bytes
                if s.is_bytes:
                    assert s.label.startswith("<0x") and s.label.endswith(">")
        assert table["English"]["vs_english"] == 1.0
    smol = split(LightTokenizer(default_model_path), SAMPLES["Japanese"])
    assert any(s.is_bytes for s in smol)  # SmolLM2 splits Japanese characters into bytes


def test_hardware_timeline_recomputes_from_the_runs_own_timings(smollm):
    from engine.backends.mlx.generate import generate_records
    from engine.machine.hardware_timeline import timeline
    from engine.run.records import ModelRecord
    from engine.run.run_result import RunResult
    from engine.run.settings import SamplingSettings

    run = RunResult()
    for r in generate_records(
        smollm, "Count to five.", SamplingSettings(temperature=0, max_tokens=8)
    ):
        run.add(r)
    model = ModelRecord(
        name="m",
        path="p",
        architecture="llama",
        quantization="q",
        size_bytes=1,
        context_length=8192,
        device="CPU",
        load_s=0.0,
        weight_bytes=500_000_000,
        parameters=135_000_000,
        memory_gbs=29.0,
        matmul_gflops=100.0,
        limits_source="measured",
    )
    t = timeline(model, run.tokens, run.done, run.done.prompt_tokens)
    args = smollm.model.args  # K and V, per layer, per KV head: head_dim float32 values
    per_token = 2 * args.num_hidden_layers * args.num_key_value_heads * args.head_dim * 4
    assert t.kv_bytes_per_token == per_token
    assert run.done.kv_cache_tokens == run.done.prompt_tokens + len(run.tokens) - 1
    kv = per_token
    assert t.steps == [r.step for r in run.tokens[1:]]
    for step, gbs in zip(t.steps, t.step_gbs, strict=True):
        rec = run.tokens[step]
        assert gbs == pytest.approx((5e8 + kv * rec.context_tokens) / rec.latency_s / 1e9)
    want = 2 * 135e6 * run.done.prompt_tokens / run.done.prefill_s / 1e9
    assert t.prefill_gflops == pytest.approx(want)
    assert t.memory_gbs == 29.0 and t.limits_source == "measured"


def test_cli_inspect_json_prints_the_engines_numbers(smollm, sentence_pass, default_model_path):
    ids, p = sentence_pass
    out = cli(
        "inspect", "--prompt", SENTENCE, "--raw", "--model", str(default_model_path),
        "--what", "attention", "--layer", "15", "--head", "2", "--json", timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["type"] == "inspect" and record["ids"] == ids
    got = np.array(record["data"]["weights"])
    assert np.abs(got - attention_weights(p, 15)[2]).max() < 1e-4
    bad = cli(
        "inspect", "--prompt", "hi", "--model", str(default_model_path),
        "--what", "attention", "--layer", "99", timeout=300,
    )  # fmt: skip
    assert bad.returncode == 2 and "layer 99 does not exist" in bad.stderr


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "gemma3", "phi3"])
def test_every_architecture_is_inspectable(arch):
    """Tiny random-weight models of each architecture mlx-lm runs: one attention
    capture and one residual per layer, causal rows summing to 1, and the lens's
    last layer equal to the model's own distribution."""
    from tests.gguf_models import _args

    module, args = _args(arch, 300)
    model = module.Model(args)
    p = run_pass(model, list(range(1, 20)))
    assert len(p.queries) == len(p.hidden) == args.num_hidden_layers
    for layer in range(args.num_hidden_layers):
        w = attention_weights(p, layer)
        assert np.allclose(w.sum(-1), 1.0, atol=1e-5) and np.triu(w, 1).max() == 0.0
    own = np.array(mx.softmax(p.logits[-1]))
    for tid, prob in logit_lens(model, p, 18)[-1]["top"]:
        assert prob == pytest.approx(float(own[tid]), abs=1e-4)
