"""What each GGUF architecture becomes in mlx-lm: its config.json fields and its
tensor names.

Tensor names go through the `gguf` package's own tables (`MODEL_TENSORS` says
which tensors an architecture has, `TENSOR_NAMES` their GGUF names), mapped to
the names mlx-lm's model classes use. llama.cpp's converters change some
weights on the way in, and this module undoes or accounts for that:

- llama: q/k rows are permuted for llama.cpp's rotary layout, so the model
  runs with `rope_traditional: true` (the same rotation, no weight copy).
- gemma3: norm weights were stored as 1 + w; mlx-lm's Gemma norm adds the 1.
- phi3: attention may be fused (attn_qkv) or split; mlx-lm wants it fused.
"""

from __future__ import annotations

import numpy as np

from engine.errors import ModelError

ARCHITECTURES = {  # GGUF general.architecture -> mlx-lm model_type
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
}
_COMMON = {
    "ATTN_NORM": "input_layernorm",
    "ATTN_Q": "self_attn.q_proj",
    "ATTN_K": "self_attn.k_proj",
    "ATTN_V": "self_attn.v_proj",
    "ATTN_OUT": "self_attn.o_proj",
    "ATTN_QKV": "self_attn.qkv_proj",
    "ATTN_Q_NORM": "self_attn.q_norm",
    "ATTN_K_NORM": "self_attn.k_norm",
    "FFN_NORM": "post_attention_layernorm",
    "FFN_GATE": "mlp.gate_proj",
    "FFN_UP": "mlp.up_proj",
    "FFN_DOWN": "mlp.down_proj",
    "TOKEN_EMBD": "model.embed_tokens",
    "OUTPUT_NORM": "model.norm",
    "OUTPUT": "lm_head",
}
_OVERRIDES = {
    "gemma3": {
        "ATTN_POST_NORM": "post_attention_layernorm",
        "FFN_PRE_NORM": "pre_feedforward_layernorm",
        "FFN_POST_NORM": "post_feedforward_layernorm",
    },
    "phi3": {"FFN_UP": "mlp.gate_up_proj"},
}
_NOT_WEIGHTS = {"ROPE_FREQS", "ROPE_FACTORS_LONG", "ROPE_FACTORS_SHORT", "ATTN_ROT_EMBD"}


def check_architecture(arch: str) -> str:
    """The mlx-lm model type for a GGUF architecture; ModelError if it is not supported."""
    if arch not in ARCHITECTURES:
        raise ModelError(
            f"unsupported architecture '{arch}': Logitscope converts "
            f"{', '.join(ARCHITECTURES)} GGUF files; open an MLX model folder instead"
        )
    return ARCHITECTURES[arch]


def name_map(arch: str, n_layers: int) -> dict[str, str | None]:
    """GGUF tensor base name (without .weight/.bias) -> mlx-lm module path;
    None for tensors that are configuration, not weights (rope factors)."""
    import gguf

    check_architecture(arch)
    kinds = gguf.MODEL_TENSORS[gguf.MODEL_ARCH[arch.upper()]]
    table = {**_COMMON, **_OVERRIDES.get(arch, {})}
    out: dict[str, str | None] = {}
    for kind in kinds:
        pattern = gguf.TENSOR_NAMES[kind]
        target = None if kind.name in _NOT_WEIGHTS else table.get(kind.name)
        if target is None and kind.name not in _NOT_WEIGHTS:
            continue  # an optional tensor mlx-lm's model does not have (e.g. MoE)
        if "{bid}" in pattern:
            for i in range(n_layers):
                out[pattern.format(bid=i)] = target and f"model.layers.{i}.{target}"
        else:
            out[pattern] = target
    return out


def mlx_name(names: dict[str, str | None], gguf_name: str) -> str | None:
    """`blk.3.attn_q.weight` -> `model.layers.3.self_attn.q_proj.weight`."""
    base, _, suffix = gguf_name.rpartition(".")
    if base not in names:
        raise ModelError(f"unknown tensor '{gguf_name}' in GGUF file")
    target = names[base]
    return target and f"{target}.{suffix}"


def adjust(arch: str, name: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Undo a llama.cpp converter change on one tensor (float tensors only)."""
    if arch == "gemma3" and name.endswith("norm") and "scales" not in arrays:
        return {"weight": arrays["weight"].astype(np.float32) - 1.0}
    return arrays


def _get(meta: dict, arch: str, key: str, default=None):
    return meta.get(f"{arch}.{key}", default)


def build_config(meta: dict, has_output: bool, rope_factors: dict | None = None) -> dict:
    """An mlx-lm config.json for this GGUF's metadata (quantization added by the caller)."""
    arch = meta.get("general.architecture", "")
    model_type = check_architecture(arch)
    heads = _get(meta, arch, "attention.head_count")
    hidden = _get(meta, arch, "embedding_length")
    head_dim = _get(meta, arch, "attention.key_length") or hidden // heads
    eos = meta.get("tokenizer.ggml.eos_token_id")
    config = {
        "model_type": model_type,
        "hidden_size": hidden,
        "num_hidden_layers": _get(meta, arch, "block_count"),
        "intermediate_size": _get(meta, arch, "feed_forward_length"),
        "num_attention_heads": heads,
        "num_key_value_heads": _get(meta, arch, "attention.head_count_kv", heads),
        "head_dim": head_dim,
        "rms_norm_eps": float(_get(meta, arch, "attention.layer_norm_rms_epsilon", 1e-6)),
        "rope_theta": float(_get(meta, arch, "rope.freq_base", 10000.0)),
        "max_position_embeddings": _get(meta, arch, "context_length"),
        "vocab_size": len(meta["tokenizer.ggml.tokens"]),
        "tie_word_embeddings": not has_output,
        "bos_token_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": end_token_ids(meta) or eos,
    }
    if arch == "llama":
        config["head_dim"] = _get(meta, arch, "rope.dimension_count", head_dim)
        config["rope_traditional"] = True
    elif arch == "gemma3":
        size = str(meta.get("general.size_label", "")).upper()
        config["query_pre_attn_scalar"] = hidden // heads if size == "27B" else head_dim
        config["sliding_window"] = _get(meta, arch, "attention.sliding_window", 512)
        config["sliding_window_pattern"] = 6
        config["rope_local_base_freq"] = 10000.0
        if factor := _get(meta, arch, "rope.scaling.factor"):
            config["rope_scaling"] = {"rope_type": "linear", "factor": float(factor)}
    elif arch == "phi3":
        rotary = _get(meta, arch, "rope.dimension_count", head_dim)
        config["partial_rotary_factor"] = rotary / head_dim
        original = _get(meta, arch, "rope.scaling.original_context_length")
        if original:
            config["original_max_position_embeddings"] = original
        if rope_factors:
            config["rope_scaling"] = {"type": "longrope", **rope_factors}
    return config


END_MARKERS = ("<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>", "<|endoftext|>")


def end_token_ids(meta: dict) -> list[int]:
    """The end-of-sequence id plus the vocabulary's end-of-turn markers, so a chat
    reply stops where the template ends a turn (Gemma's <end_of_turn>, …)."""
    tokens = meta["tokenizer.ggml.tokens"]
    ids = []
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"):
        if isinstance(meta.get(key), int):
            ids.append(meta[key])
    wanted = set(END_MARKERS)
    ids += [i for i, t in enumerate(tokens[:300_000]) if t in wanted]
    return sorted(set(ids))
