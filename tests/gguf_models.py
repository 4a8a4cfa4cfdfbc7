"""Tiny random-weight mlx-lm models written as GGUF files the way llama.cpp's
converter writes them (its tensor names, q/k permutation for llama, Gemma's
1 + w norms, phi3's fused qkv), in any tensor type, for conversion tests.

`write_model_gguf` returns the path and the reference mlx-lm model (HF layout)
holding exactly the weights the file encodes (dequantized where quantized)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.gguf_fixtures import CHAT, SPECIALS, _vocab

HIDDEN, HEADS, KV_HEADS, FFN, HEAD_DIM = 256, 4, 2, 512, 64


def _layers(arch: str) -> int:
    return 6 if arch == "gemma3" else 2  # mlx-lm's gemma3 needs one global layer in 6


MODEL_TYPES = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
}
# Where each K/IQ block keeps its float16 scale(s).
F16_AT = {
    "Q2_K": (80, 82),
    "Q3_K": (108,),
    "Q4_K": (0, 2),
    "Q5_K": (0, 2),
    "Q6_K": (208,),
    "IQ2_XXS": (0,),
    "IQ2_XS": (0,),
    "IQ2_S": (0,),
    "IQ3_XXS": (0,),
    "IQ3_S": (0,),
    "IQ1_S": (0,),
    "IQ4_NL": (0,),
    "IQ4_XS": (0,),
}


def _args(arch: str, vocab: int):
    import importlib

    model_type = MODEL_TYPES[arch]
    module = importlib.import_module(f"mlx_lm.models.{model_type}")
    fields = dict(
        model_type=model_type,
        hidden_size=HIDDEN,
        num_hidden_layers=_layers(arch),
        intermediate_size=FFN,
        num_attention_heads=HEADS,
        rms_norm_eps=1e-5,
        vocab_size=vocab,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=512,
        rope_theta=10000.0,
        head_dim=HEAD_DIM,
        tie_word_embeddings=arch != "qwen3",
    )
    if arch == "gemma3":
        fields.update(query_pre_attn_scalar=HEAD_DIM, sliding_window=512)
        fields.pop("tie_word_embeddings")
    if arch == "phi3":
        fields.pop("head_dim")
    return module, module.ModelArgs.from_dict(fields)


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf `permute` (q/k rows for its rotary layout)."""
    return (
        w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
    )


def _unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    return (
        w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
    )


def _gguf_name(arch: str, hf: str) -> str:
    from engine.backends.mlx.gguf_arch import name_map

    reverse = {v: k for k, v in name_map(arch, _layers(arch)).items() if v}
    base, _, suffix = hf.rpartition(".")
    return f"{reverse[base]}.{suffix}"


def _encode(data: np.ndarray, qtype: str, rng) -> tuple[np.ndarray, np.ndarray, object]:
    """(what to write, its dequantized values, raw_dtype or None)."""
    import gguf

    if qtype == "F32":
        return data, data, None
    qt = gguf.GGMLQuantizationType[qtype]
    try:
        raw = gguf.quants.quantize(data, qt)
    except (NotImplementedError, gguf.quants.QuantError):
        raw = _random_blocks(qtype, data.size, rng).reshape(data.shape[0], -1)
    return raw, gguf.quants.dequantize(raw, qt).reshape(data.shape), qt


def _k_scales(sc: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """Pack 8 six-bit (scale, min) pairs per block as Q4_K/Q5_K keep them
    (the inverse of ggml's get_scale_min_k4)."""
    s = np.zeros((len(sc), 12), np.uint8)
    s[:, 0:4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    s[:, 4:8] = mn[:, :4] | ((mn[:, 4:] >> 4) << 6)
    s[:, 8:12] = (sc[:, 4:] & 0xF) | ((mn[:, 4:] & 0xF) << 4)
    return s


def _random_blocks(qtype: str, n_values: int, rng) -> np.ndarray:
    """Random blocks of a type gguf cannot quantize to, with weight-like magnitudes
    (std ≈ 0.2, centred): random quants, sane float16 scales."""
    import gguf

    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]]
    n = n_values // block
    raw = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    d_typical = {"Q4_K": 0.0015, "Q5_K": 0.0008, "Q2_K": 0.01, "Q3_K": 0.003, "Q6_K": 0.00015}.get(
        qtype, 0.0015
    )
    for at in F16_AT[qtype]:
        d = rng.uniform(0.8, 1.2, size=(n, 1)) * d_typical
        raw[:, at : at + 2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    if qtype in ("Q4_K", "Q5_K"):
        levels = 16 if qtype == "Q4_K" else 32
        sc = rng.integers(24, 40, size=(n, 8)).astype(np.uint8)
        mn = np.rint(sc.astype(np.float32) * (levels - 1) / 2 / levels).astype(
            np.uint8
        )  # dmin = d * levels
        raw[:, 2:4] = (raw[:, 0:2].copy().view(np.float16) * levels).view(np.uint8)
        raw[:, 4:16] = _k_scales(sc, mn)
    if qtype == "Q2_K":  # 4-bit scale and min per 16 values; dmin = 2 d
        sc = rng.integers(8, 16, size=(n, 16)).astype(np.uint8)
        raw[:, 0:16] = sc | (np.rint(sc * 0.75).astype(np.uint8) << 4)
        raw[:, 82:84] = (raw[:, 80:82].copy().view(np.float16) * 2).view(np.uint8)
    return raw


def write_model_gguf(
    path: Path,
    arch: str = "llama",
    qtype: str = "F32",
    seed: int = 0,
    spm: tuple[list, list, list] | None = None,
):
    """Write a small `arch` GGUF; `spm` = (pieces, scores, types) gives it a
    SentencePiece vocabulary instead of the byte-level BPE one.

    Returns:
        (path, reference mlx-lm model with the file's exact weights)
    """
    import gguf
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten

    rng = np.random.default_rng(seed)
    tokens, merges = _vocab()
    vocab = len(spm[0]) if spm else len(tokens)
    module, args = _args(arch, vocab)
    mx.random.seed(seed)
    model = module.Model(args)
    params = {k: np.array(v, np.float32) for k, v in tree_flatten(model.parameters())}
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(_layers(arch))
    w.add_context_length(512)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    if arch == "gemma3":
        w.add_sliding_window(512)
    if spm:
        w.add_tokenizer_model("llama")
        w.add_token_list(spm[0])
        w.add_token_scores(spm[1])
        w.add_token_types(spm[2])
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_add_space_prefix(True)
    else:
        w.add_tokenizer_model("gpt2")
        w.add_token_list(tokens)
        w.add_token_types([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)))
        w.add_token_merges(merges)
        w.add_bos_token_id(0)
        w.add_eos_token_id(2)
        w.add_chat_template(CHAT)
    reference = {}
    for name, value in params.items():
        is_norm = value.ndim == 1
        if is_norm:
            value = 1.0 + 0.1 * rng.standard_normal(value.shape).astype(np.float32)
        elif name.endswith(".bias"):
            value = 0.1 * rng.standard_normal(value.shape).astype(np.float32)
        else:
            value = 0.2 * rng.standard_normal(value.shape).astype(np.float32)
        stored = value
        if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
            stored = _permute(value, HEADS if "q_proj" in name else KV_HEADS)
        if arch == "gemma3" and is_norm:
            stored = value + 1.0
        if is_norm or name.endswith(".bias"):
            w.add_tensor(_gguf_name(arch, name), stored)
            reference[name] = value
            continue
        raw, values, qt = _encode(stored, qtype, rng)
        if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
            values = _unpermute(values, HEADS if "q_proj" in name else KV_HEADS)
        w.add_tensor(_gguf_name(arch, name), raw, raw_dtype=qt) if qt else w.add_tensor(
            _gguf_name(arch, name), raw
        )
        reference[name] = values
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    model.update(tree_unflatten([(k, mx.array(v)) for k, v in reference.items()]))
    return Path(path), model
