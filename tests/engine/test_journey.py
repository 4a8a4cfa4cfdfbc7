"""The journey of one token and attention by position, on the real default model
and Gemma 3 270M, against NumPy float64 computed without the engine's code: the
nearest embeddings, each layer's attention and feed-forward contributions, the
sampler funnel (a float64 re-implementation of mlx-lm's filters), the KV bytes a
step adds, and the attention masses per position."""

from __future__ import annotations

import json
import math

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.funnel import sampling_funnel
from engine.backends.mlx.inside import attention_weights, run_pass
from engine.backends.mlx.journey import journey
from engine.backends.mlx.position import attention_by_position
from engine.run.settings import SamplingSettings
from tests.engine.test_cli import cli
from tests.engine.test_inside import _rms, _rope_traditional

PROMPT = "The cat sat on the mat because it was warm. The cat"


def _np(a) -> np.ndarray:
    return np.array(a.astype(mx.float32), dtype=np.float64)


def _w(linear) -> np.ndarray:
    """A linear layer's weight as float64 (dequantized where stored quantized)."""
    if hasattr(linear, "scales"):
        w = mx.dequantize(
            linear.weight, linear.scales, linear.biases, linear.group_size, linear.bits
        )
        return _np(w)
    return _np(linear.weight)


@pytest.fixture(scope="module")
def gemma32(gemma_path):
    """Gemma 3 270M on the engine's float32 path (the comparisons need float32)."""
    from engine.backends.mlx.loader import load_model

    lm, _i, _s = load_model(gemma_path, prefer="speed")
    return lm


def _case(lm):
    ids = lm.tokenizer.encode(PROMPT)
    greedy = SamplingSettings(temperature=0.0).validate()
    return ids, journey(lm, ids, len(ids), int(ids[3]), greedy, list(ids)), run_pass(lm.model, ids)


@pytest.fixture(scope="module")
def smollm_case(smollm):
    return _case(smollm)


@pytest.fixture(scope="module")
def gemma_case(gemma32):
    return _case(gemma32)


def _models(request, name):
    lm = request.getfixturevalue("smollm" if name == "smollm" else "gemma32")
    return lm, request.getfixturevalue(f"{name}_case")


MODELS = ["smollm", "gemma"]


@pytest.mark.parametrize("name", MODELS)
def test_nearest_embeddings_by_cosine(request, name):
    lm, (ids, data, _p) = _models(request, name)
    emb = data["embedding"]
    table = lm.model.model.embed_tokens
    vec = _np(table(mx.array([ids[-1]]))[0])
    cos = np.empty(table.weight.shape[0])
    for a in range(0, len(cos), 32_768):
        rows = _np(table(mx.arange(a, min(a + 32_768, len(cos)))))
        norms = np.linalg.norm(rows, axis=1)
        cos[a : a + len(rows)] = (
            rows @ vec / np.where(norms > 0, norms, np.inf) / np.linalg.norm(vec)
        )
    cos[ids[-1]] = -np.inf
    want = np.argsort(-cos)[:8]
    assert [i for i, _c in emb["neighbours"]] == want.tolist()
    assert np.abs(np.array([c for _i, c in emb["neighbours"]]) - cos[want]).max() < 1e-5
    assert abs(emb["norm"] - np.linalg.norm(vec)) < 1e-5 * np.linalg.norm(vec)
    assert np.abs(np.array(emb["values"]) - vec).max() < 1e-5


def _llama_block(lm, layer, h):
    """One Llama block in float64: (Δ attention, Δ feed-forward) at the last position."""
    a, blk = lm.model.args, lm.model.model.layers[layer]
    t, heads, kv, d = len(h), a.num_attention_heads, a.num_key_value_heads, a.head_dim
    x = _rms(h, _np(blk.input_layernorm.weight), a.rms_norm_eps)
    att = blk.self_attn
    q = (x @ _w(att.q_proj).T).reshape(t, heads, d).transpose(1, 0, 2)
    k = (x @ _w(att.k_proj).T).reshape(t, kv, d).transpose(1, 0, 2)
    v = (x @ _w(att.v_proj).T).reshape(t, kv, d).transpose(1, 0, 2)
    q, k = _rope_traditional(q, a.rope_theta), _rope_traditional(k, a.rope_theta)
    k, v = np.repeat(k, heads // kv, 0), np.repeat(v, heads // kv, 0)
    d_attn = _attend(q, k, v, 1 / math.sqrt(d)) @ _w(att.o_proj).T
    h1 = h[-1] + d_attn
    m = _rms(h1, _np(blk.post_attention_layernorm.weight), a.rms_norm_eps)
    g, u = m @ _w(blk.mlp.gate_proj).T, m @ _w(blk.mlp.up_proj).T
    return d_attn, (g / (1 + np.exp(-g)) * u) @ _w(blk.mlp.down_proj).T


def _attend(q, k, v, scale):
    """The last query's attention output, (H * D,)."""
    s = q[:, -1:, :] @ k.transpose(0, 2, 1) * scale  # (H, 1, T)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return (w @ v)[:, 0, :].reshape(-1)


def _rope_halves(x, theta):
    """RoPE with traditional=False: rotate (x[i], x[i + d/2])."""
    t, d = x.shape[-2:]
    angle = np.arange(t)[:, None] * theta ** (-np.arange(0, d, 2) / d)[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def _gemma_block(lm, layer, h):
    """One Gemma 3 block in float64 (norms with 1 + w, q/k norms, GELU-tanh)."""
    a, blk = lm.model.args, lm.model.model.layers[layer]
    t, heads, kv, d = len(h), a.num_attention_heads, a.num_key_value_heads, a.head_dim
    eps = a.rms_norm_eps

    def norm(x, mod):
        return _rms(x, 1 + _np(mod.weight), eps)

    att = blk.self_attn
    x = norm(h, blk.input_layernorm)
    q = norm((x @ _w(att.q_proj).T).reshape(t, heads, d), att.q_norm).transpose(1, 0, 2)
    k = norm((x @ _w(att.k_proj).T).reshape(t, kv, d), att.k_norm).transpose(1, 0, 2)
    v = (x @ _w(att.v_proj).T).reshape(t, kv, d).transpose(1, 0, 2)
    base = a.rope_local_base_freq if (layer + 1) % a.sliding_window_pattern else a.rope_theta
    q, k = _rope_halves(q, base), _rope_halves(k, base)
    k, v = np.repeat(k, heads // kv, 0), np.repeat(v, heads // kv, 0)
    o = _attend(q, k, v, a.query_pre_attn_scalar**-0.5) @ _w(att.o_proj).T
    d_attn = norm(o, blk.post_attention_layernorm)
    m = norm(h[-1] + d_attn, blk.pre_feedforward_layernorm)
    g = m @ _w(blk.mlp.gate_proj).T
    gelu = 0.5 * g * (1 + np.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g**3)))
    d_ffn = (gelu * (m @ _w(blk.mlp.up_proj).T)) @ _w(blk.mlp.down_proj).T
    return d_attn, norm(d_ffn, blk.post_feedforward_layernorm)


@pytest.mark.parametrize(
    ("name", "layer"),
    [("smollm", 0), ("smollm", 15), ("smollm", 29), ("gemma", 1), ("gemma", 5), ("gemma", 17)],
)
def test_contributions_per_layer_equal_numpy(request, name, layer):
    lm, (ids, data, p) = _models(request, name)
    if layer == 0:
        h = _np(lm.model.model.embed_tokens(mx.array(ids)))
    else:
        h = _np(p.hidden[layer - 1][0])  # (T, D)
    block = _llama_block if name == "smollm" else _gemma_block
    d_attn, d_ffn = block(lm, layer, h)
    h1 = h[-1] + d_attn
    row = data["layers"][layer]
    for got, want in (
        (row["norm_in"], np.linalg.norm(h[-1])),
        (row["attention"], np.linalg.norm(d_attn) / np.linalg.norm(h[-1])),
        (row["ffn"], np.linalg.norm(d_ffn) / np.linalg.norm(h1)),
        (row["norm_out"], np.linalg.norm(h1 + d_ffn)),
    ):
        assert abs(got - want) <= 1e-3 * abs(want), (got, want)


def _funnel64(logits, history, s: SamplingSettings):
    """mlx-lm's sampler in float64: [(tokens kept, distribution)] per stage."""
    x = logits.astype(np.float64).copy()

    def softmax(z):
        e = np.exp(z - z[np.isfinite(z)].max())
        return e / e.sum()

    out = [(x.size, softmax(x))]
    if s.repetition_penalty != 1.0:
        recent = list(history[-20:])
        x[recent] = np.where(
            x[recent] < 0, x[recent] * s.repetition_penalty, x[recent] / s.repetition_penalty
        )
        out.append((x.size, softmax(x)))
    lp = np.log(softmax(x))
    if s.temperature == 0:
        one = np.zeros_like(lp)
        one[np.argmax(lp)] = 1.0
        return out + [(1, one)]
    keep = np.ones(lp.size, bool)
    order = np.argsort(-lp, kind="stable")
    if 0 < s.top_p < 1:
        p = np.exp(lp[order])
        before = np.cumsum(p) - p  # mass of the tokens more likely than each
        keep &= lp >= lp[order][before < s.top_p].min()
        out.append((keep.sum(), softmax(np.where(keep, lp, -np.inf))))
    if s.min_p > 0:
        keep &= lp >= lp.max() + math.log(s.min_p)
        out.append((keep.sum(), softmax(np.where(keep, lp, -np.inf))))
    if s.top_k > 0:
        kept_order = [i for i in order if keep[i]]
        keep[:] = False
        keep[kept_order[: s.top_k]] = True
        out.append((keep.sum(), softmax(np.where(keep, lp, -np.inf))))
    return out + [(keep.sum(), softmax(np.where(keep, lp / s.temperature, -np.inf)))]


FUNNELS = {
    "greedy": SamplingSettings(temperature=0.0),
    "T0.7 top-p 0.9": SamplingSettings(temperature=0.7, top_p=0.9),
    "top-k 20": SamplingSettings(temperature=1.0, top_k=20),
    "min-p 0.05": SamplingSettings(temperature=1.0, min_p=0.05),
    "penalty 1.3": SamplingSettings(temperature=0.8, repetition_penalty=1.3, top_k=40),
}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("setting", list(FUNNELS))
def test_sampler_funnel_equals_a_float64_reimplementation(request, name, setting):
    lm, (ids, _data, p) = _models(request, name)
    s = FUNNELS[setting].validate()
    logits = p.logits[-1]  # (V,)
    raw = np.array(logits, dtype=np.float64)
    chosen = int(np.argsort(-raw)[2])  # the third most likely: kept by some stages only
    stages = sampling_funnel(logits, list(ids), s, chosen, lm.vocab_size)
    want = _funnel64(np.array(logits), ids, s)
    assert len(stages) == len(want)
    if s.temperature == 0:
        assert stages[-1]["stage"] == "greedy (argmax)"
    for got, (count, dist) in zip(stages, want, strict=True):
        assert got["tokens"] == count, got
        assert abs(got["chosen_prob"] - dist[chosen]) < 1e-5, got
        if dist[chosen] > 0:
            assert got["chosen_rank"] == int((dist > dist[chosen]).sum()) + 1
        else:
            assert got["chosen_rank"] is None
    assert stages[-1]["mass"] <= stages[0]["mass"] + 1e-12


def test_penalty_funnel_lowers_a_repeated_token(smollm, smollm_case):
    ids, _data, p = smollm_case
    s = SamplingSettings(temperature=1.0, repetition_penalty=1.3).validate()
    cat = smollm.tokenizer.encode(" cat")[0]  # in the prompt: penalised
    stages = sampling_funnel(p.logits[-1], list(ids), s, cat, smollm.vocab_size)
    assert [st["stage"] for st in stages] == ["raw", "repetition penalty", "temperature 1"]
    assert stages[1]["chosen_prob"] < stages[0]["chosen_prob"] / 2


@pytest.mark.parametrize("name", MODELS)
def test_kv_bytes_added_and_the_final_distribution(request, name):
    lm, (ids, data, p) = _models(request, name)
    a = lm.model.args
    it = data["iteration"]
    per_token = 2 * a.num_hidden_layers * a.num_key_value_heads * a.head_dim * 4  # float32 K and V
    assert it["kv_bytes_added"] == per_token
    assert it["kv_bytes_before"] == per_token * (len(ids) - 1)
    assert it["context_tokens"] == len(ids) + 1 and it["next_step"] == 1
    proj = data["projection"]
    own = np.array(p.logits[-1], dtype=np.float64)
    probs = np.exp(own - own.max())
    probs /= probs.sum()
    chosen = proj["chosen"]
    assert abs(chosen["prob"] - probs[chosen["token_id"]]) < 1e-4
    assert chosen["rank"] == int((own > own[chosen["token_id"]]).sum()) + 1
    assert proj["top"][0][0] == int(np.argmax(own))
    assert data["projection"]["lens"][-1]["chosen_rank"] == chosen["rank"]


@pytest.mark.parametrize("name", MODELS)
def test_position_masses_are_the_attention_rows(request, name):
    lm, (ids, _data, p) = _models(request, name)
    got = attention_by_position(p, len(ids))
    by_layer = np.array(got["by_layer"])
    assert by_layer.shape == (lm.model.args.num_hidden_layers, len(ids))
    assert np.abs(by_layer.sum(axis=1) - 1).max() < 1e-5
    for layer in (0, by_layer.shape[0] - 1):
        want = attention_weights(p, layer)[:, -1, :].mean(axis=0)
        assert np.abs(by_layer[layer] - want).max() < 1e-6
    mean = np.array(got["mean"])
    bins = got["bins"]
    assert abs(bins["first token"] - mean[0]) < 1e-9
    parts = ("first token", "first 10%", "middle", "last 10%")
    assert abs(sum(bins[b] for b in parts) - 1) < 1e-5
    assert abs(bins["recent 32"] - mean[-32:].sum()) < 1e-9


def test_position_layer_zero_equals_numpy(smollm, smollm_case):
    ids, _data, p = smollm_case
    a, blk = smollm.model.args, smollm.model.model.layers[0]
    t, heads, kv, d = len(ids), a.num_attention_heads, a.num_key_value_heads, a.head_dim
    x = _rms(
        _np(smollm.model.model.embed_tokens(mx.array(ids))),
        _np(blk.input_layernorm.weight),
        a.rms_norm_eps,
    )
    q = (x @ _w(blk.self_attn.q_proj).T).reshape(t, heads, d).transpose(1, 0, 2)
    k = (x @ _w(blk.self_attn.k_proj).T).reshape(t, kv, d).transpose(1, 0, 2)
    q, k = _rope_traditional(q, a.rope_theta), _rope_traditional(k, a.rope_theta)
    s = np.einsum("hd,htd->ht", q[:, -1, :], np.repeat(k, heads // kv, 0)) / math.sqrt(d)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    got = np.array(attention_by_position(p, t)["by_layer"][0])
    assert np.abs(got - w.mean(axis=0)).max() < 1e-5


def _cli(model_path, what, *extra):
    out = cli(
        "inspect", "--prompt", PROMPT, "--raw", "--model", str(model_path),
        "--what", what, "--step", "1", "--json", *extra, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_cli_journey_and_position_json(smollm, default_model_path):
    rec = _cli(default_model_path, "journey", "--temp", "0.7", "--top-p", "0.9")
    d = rec["data"]
    assert rec["what"] == "journey" and rec["step"] == 1
    assert [s["stage"] for s in d["sampling"]["stages"]] == ["raw", "top-p", "temperature 0.7"]
    assert "temperature is applied last" in d["sampling"]["order"]
    a = smollm.model.args
    assert (
        d["iteration"]["kv_bytes_added"]
        == 2 * a.num_hidden_layers * a.num_key_value_heads * a.head_dim * 4
    )
    ids = rec["ids"]
    assert len(d["layers"]) == a.num_hidden_layers and d["tokenization"]["new"] == len(ids)
    pos = _cli(default_model_path, "position")
    assert pos["ids"] == ids
    want = attention_by_position(run_pass(smollm.model, ids), len(ids) - 1)
    assert np.abs(np.array(pos["data"]["mean"]) - np.array(want["mean"])).max() < 1e-4
    assert pos["data"]["prompt_tokens"] == len(ids) - 1


def test_kv_bytes_past_gemmas_sliding_window(gemma32):
    """Past 512 tokens Gemma's 15 sliding-window layers overwrite their oldest entry:
    only its 3 global layers add a token's keys and values."""
    ids = (gemma32.tokenizer.encode(PROMPT) * 60)[:530]
    s = SamplingSettings(temperature=0.0).validate()
    it = journey(gemma32, ids, len(ids), None, s, ids)["iteration"]
    a = gemma32.model.args
    glob = a.num_hidden_layers // a.sliding_window_pattern
    per_layer_token = 2 * a.num_key_value_heads * a.head_dim * 4
    assert it["kv_layers_full"] == a.num_hidden_layers - glob == 15
    assert it["kv_bytes_added"] == glob * per_layer_token
    window = a.sliding_window
    assert it["kv_bytes_before"] == per_layer_token * (15 * window + glob * (len(ids) - 1))
