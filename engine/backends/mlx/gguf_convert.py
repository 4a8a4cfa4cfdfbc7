"""Convert a llama-architecture GGUF file into a standard MLX model folder.

`mx.load` reads GGUF natively and returns weights already in MLX's quantized
layout (affine, group size 32) plus the metadata: architecture, BPE vocabulary,
merges, special tokens and chat template. This module renames the tensors to
mlx-lm's llama names, writes `config.json`, `model.safetensors`,
`tokenizer.json` (rebuilt with the `tokenizers` library, no PyTorch) and
`tokenizer_config.json`. It knows nothing about where files live or which model
is the default; see `default_model.py` for that.

llama.cpp's writer permutes the q/k projections for its rotary layout, so the
converted model uses `rope_traditional: true`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from engine.errors import ModelError
from engine.models.gguf_check import GGUFInfo, check_gguf

GGUF_MAGIC = b"GGUF"
SUPPORTED_ARCHITECTURES = ("llama",)
CONVERTED_MARKER = "logitscope_conversion.json"
CONVERTER_VERSION = 2  # 2: keyed on the source's content hash, sanity-checked

_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
_TOP_NAMES = {
    "token_embd": "model.embed_tokens",
    "output_norm": "model.norm",
    "output": "lm_head",
}
# GGUF token types (llama.cpp's llama_token_type).
_TOKEN_CONTROL = 3
_TOKEN_USER_DEFINED = 4


MLX_GGUF_TYPES = ("F32", "F16", "Q4_0", "Q4_1", "Q8_0")  # what `mx.load` reads as is


def check_gguf_header(path: Path) -> GGUFInfo:
    """Validate the file's whole structure (pure Python) and that MLX can read its
    tensor types; raise ModelError naming the problem otherwise."""
    info = check_gguf(path)
    if info.architecture not in SUPPORTED_ARCHITECTURES:
        raise ModelError(
            f"unsupported architecture '{info.architecture}': Logitscope converts "
            f"{', '.join(SUPPORTED_ARCHITECTURES)} GGUF files; open an MLX model folder instead"
        )
    other = sorted(set(info.tensor_types) - set(MLX_GGUF_TYPES))
    if other:
        raise ModelError(
            f"{Path(path).name} uses {', '.join(other)} tensors, which Logitscope cannot "
            f"convert yet (it reads {', '.join(MLX_GGUF_TYPES)}); use a Q4_0, Q4_1 or Q8_0 "
            "file of this model, or an MLX model folder"
        )
    return info


def read_gguf(path: Path) -> tuple[dict, dict, GGUFInfo]:
    """Read a GGUF file's tensors and metadata with MLX, after checking its structure.

    Returns:
        (weights, metadata, info): tensor name -> mx.array, key -> value, the
        pure-Python header summary.
    """
    import mlx.core as mx

    info = check_gguf_header(path)
    try:
        weights, meta = mx.load(str(path), return_metadata=True)
    except Exception as e:  # MLX raises RuntimeError/ValueError on torn files
        raise ModelError(f"{path} cannot be read by MLX ({e}); download it again") from e
    if not weights or "general.architecture" not in meta:
        raise ModelError(f"{path} holds no model weights or metadata; download it again")
    return weights, meta, info


def _meta(meta: dict, key: str, default=None):
    value = meta.get(key, default)
    if hasattr(value, "item") and hasattr(value, "size"):  # an mx.array scalar/vector
        return value.item() if value.size == 1 else value.tolist()
    return value


def rename_tensor(name: str) -> str:
    """Map a GGUF tensor name (`blk.3.attn_q.scales`) to mlx-lm's llama name."""
    parts = name.split(".")
    if parts[0] == "blk":
        layer, base, suffix = parts[1], parts[2], parts[3:]
        if base not in _LAYER_NAMES:
            raise ModelError(f"unknown tensor '{name}' in GGUF file")
        return ".".join([f"model.layers.{layer}", _LAYER_NAMES[base], *suffix])
    if parts[0] in _TOP_NAMES:
        return ".".join([_TOP_NAMES[parts[0]], *parts[1:]])
    raise ModelError(f"unknown tensor '{name}' in GGUF file")


def build_config(meta: dict, weights: dict, info: GGUFInfo | None = None) -> dict:
    """Return an mlx-lm llama `config.json` dict for this GGUF's metadata."""
    arch = _meta(meta, "general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ModelError(
            f"unsupported architecture '{arch}': Logitscope converts "
            f"{', '.join(SUPPORTED_ARCHITECTURES)} GGUF files; "
            "open an MLX model folder instead"
        )
    p = f"{arch}."
    n_heads = _meta(meta, p + "attention.head_count")
    hidden = _meta(meta, p + "embedding_length")
    vocab = len(meta["tokenizer.ggml.tokens"])
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": _meta(meta, p + "block_count"),
        "intermediate_size": _meta(meta, p + "feed_forward_length"),
        "num_attention_heads": n_heads,
        "num_key_value_heads": _meta(meta, p + "attention.head_count_kv", n_heads),
        "head_dim": _meta(meta, p + "rope.dimension_count", hidden // n_heads),
        "rms_norm_eps": float(_meta(meta, p + "attention.layer_norm_rms_epsilon")),
        "rope_theta": float(_meta(meta, p + "rope.freq_base", 10000.0)),
        "rope_traditional": True,
        "max_position_embeddings": _meta(meta, p + "context_length"),
        "vocab_size": vocab,
        "tie_word_embeddings": "output.weight" not in weights,
        "bos_token_id": _meta(meta, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": _meta(meta, "tokenizer.ggml.eos_token_id"),
    }
    if any(k.endswith(".scales") for k in weights):
        # mlx-lm infers each layer's bits from its packed shape (e.g. an 8-bit
        # embedding beside 4-bit layers); "bits" is the layers' own, for the label.
        layers = [t for t in (info.tensors if info else []) if t.name.startswith("blk.")]
        layer_types = [t.type_name for t in layers if len(t.shape) > 1]
        bits = 8 if layer_types and all(t == "Q8_0" for t in layer_types) else 4
        config["quantization"] = {"group_size": 32, "bits": bits}
    if info is not None:
        config["logitscope_source"] = {"format": "gguf", "tensor_types": info.tensor_types}
    return config


def build_tokenizer_json(meta: dict) -> str:
    """Rebuild a Hugging Face byte-level BPE `tokenizer.json` from GGUF vocab."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    if _meta(meta, "tokenizer.ggml.model") != "gpt2":
        raise ModelError("only byte-level BPE (gpt2-style) GGUF tokenizers can be converted")
    tokens = list(meta["tokenizer.ggml.tokens"])
    vocab = {tok: i for i, tok in enumerate(tokens)}
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    pre = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
    if _meta(meta, "tokenizer.ggml.pre") in ("smollm", "starcoder", "refact"):
        # llama.cpp splits digits one by one for these vocabularies.
        pre.insert(0, pre_tokenizers.Digits(individual_digits=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence(pre)
    tok.decoder = decoders.ByteLevel()
    types = _meta(meta, "tokenizer.ggml.token_type") or []
    from tokenizers import AddedToken

    special = [
        AddedToken(tokens[i], special=True, normalized=False)
        for i, t in enumerate(types)
        if t in (_TOKEN_CONTROL, _TOKEN_USER_DEFINED)
    ]
    tok.add_special_tokens(special)
    return tok.to_str(pretty=False)


def build_tokenizer_config(meta: dict) -> dict:
    """Return `tokenizer_config.json`: special tokens and the chat template."""
    tokens = meta["tokenizer.ggml.tokens"]

    def name(key):
        idx = _meta(meta, key)
        return tokens[idx] if idx is not None and idx < len(tokens) else None

    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": name("tokenizer.ggml.bos_token_id"),
        "eos_token": name("tokenizer.ggml.eos_token_id"),
        "unk_token": name("tokenizer.ggml.unknown_token_id"),
        "pad_token": name("tokenizer.ggml.padding_token_id"),
        "add_bos_token": bool(_meta(meta, "tokenizer.ggml.add_bos_token", False)),
        "clean_up_tokenization_spaces": False,
        "model_max_length": _meta(meta, "llama.context_length", 2048),
    }
    template = _meta(meta, "tokenizer.chat_template")
    if template:
        config["chat_template"] = template
    return {k: v for k, v in config.items() if v is not None}


def is_converted(out_dir: Path, digest: str) -> bool:
    """True if `out_dir` holds this converter's output for the source with `digest`."""
    marker = out_dir / CONVERTED_MARKER
    if not marker.exists() or not (out_dir / "model.safetensors").exists():
        return False
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info == _marker_info(info.get("source", ""), digest)


def _marker_info(name: str, digest: str) -> dict:
    return {"converter_version": CONVERTER_VERSION, "source": name, "sha256": digest}


def convert_gguf(source: Path, out_dir: Path, digest: str | None = None, progress=None) -> bool:
    """Convert `source` GGUF into an MLX model folder at `out_dir`.

    The folder is written to a temporary sibling, checked (the converted model
    must load and give finite, non-degenerate predictions) and only then renamed
    into place, so a failed or damaged conversion never replaces anything.

    Args:
        digest: the source's sha256 (computed here when not given).
        progress: optional (message, fraction) callback.

    Returns:
        True if a conversion ran, False if `out_dir` was already up to date.
    """
    import mlx.core as mx

    from engine.file_hash import content_hash

    source, out_dir = Path(source), Path(out_dir)
    digest = digest or content_hash(source, progress)
    if is_converted(out_dir, digest):
        return False
    weights, meta, info = read_gguf(source)
    config = build_config(meta, weights, info)
    renamed = {rename_tensor(k): v for k, v in weights.items()}
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=out_dir.parent))
    try:
        mx.save_safetensors(str(tmp / "model.safetensors"), renamed)
        del weights, renamed
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        (tmp / "tokenizer.json").write_text(build_tokenizer_json(meta))
        tok_cfg = build_tokenizer_config(meta)
        (tmp / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2))
        if progress:
            progress(f"Checking the converted {source.name}…", 0.93)
        from engine.backends.mlx.model_check import check_converted_model

        check_converted_model(tmp, source.name)
        (tmp / CONVERTED_MARKER).write_text(json.dumps(_marker_info(source.name, digest)))
        if out_dir.exists():  # an older conversion of this same source: replace it
            old = out_dir.with_name(f".old-{out_dir.name}-{os.getpid()}")
            out_dir.rename(old)
            tmp.rename(out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return True
