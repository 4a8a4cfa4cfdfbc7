"""Small llama GGUF files written with the `gguf` package (llama.cpp's own writer),
for conversion and fuzz tests: random weights, a byte-level BPE vocabulary."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 64, 2, 4, 2, 128, 256
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _vocab() -> tuple[list[str], list[str]]:
    from engine.models.token_bytes import _byte_decoder

    chars = sorted(_byte_decoder(), key=lambda c: _byte_decoder()[c])
    merges = ["Ġ t", "h e", "Ġt he", "i n", "a n"]
    tokens = SPECIALS + chars + [m.replace(" ", "") for m in merges]
    return tokens, merges


def write_tiny_gguf(
    path: Path, seed: int = 0, skip_keys: tuple[str, ...] = (), qtype: str = "F32"
) -> Path:
    """A 2-layer llama GGUF of ~0.2 MB. `skip_keys` leaves out metadata (for error tests)."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens, merges = _vocab()
    w = gguf.GGUFWriter(str(path), "llama")
    keys = {
        "block_count": lambda: w.add_block_count(LAYERS),
        "context_length": lambda: w.add_context_length(CONTEXT),
        "embedding_length": lambda: w.add_embedding_length(HIDDEN),
        "feed_forward_length": lambda: w.add_feed_forward_length(FFN),
        "head_count": lambda: w.add_head_count(HEADS),
        "head_count_kv": lambda: w.add_head_count_kv(KV_HEADS),
        "rms_eps": lambda: w.add_layer_norm_rms_eps(1e-5),
        "rope_freq_base": lambda: w.add_rope_freq_base(10000.0),
    }
    for name, add in keys.items():
        if name not in skip_keys:
            add()
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)))
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(2)
    w.add_chat_template(CHAT)
    vocab, head_dim = len(tokens), HIDDEN // HEADS
    kv = KV_HEADS * head_dim

    def add(name: str, shape: tuple[int, ...], norm: bool = False):
        # numpy shape is (rows, cols); GGUF stores the reverse order.
        data = (
            np.ones(shape) + 0.1 * rng.standard_normal(shape)
            if norm
            else 0.3 * rng.standard_normal(shape)
        ).astype(np.float32)
        if qtype != "F32" and not norm:
            qt = gguf.GGMLQuantizationType[qtype]
            w.add_tensor(name, gguf.quants.quantize(data, qt), raw_dtype=qt)
        else:
            w.add_tensor(name, data)

    add("token_embd.weight", (vocab, HIDDEN))
    for i in range(LAYERS):
        add(f"blk.{i}.attn_norm.weight", (HIDDEN,), norm=True)
        add(f"blk.{i}.attn_q.weight", (HIDDEN, HIDDEN))
        add(f"blk.{i}.attn_k.weight", (kv, HIDDEN))
        add(f"blk.{i}.attn_v.weight", (kv, HIDDEN))
        add(f"blk.{i}.attn_output.weight", (HIDDEN, HIDDEN))
        add(f"blk.{i}.ffn_norm.weight", (HIDDEN,), norm=True)
        add(f"blk.{i}.ffn_gate.weight", (FFN, HIDDEN))
        add(f"blk.{i}.ffn_up.weight", (FFN, HIDDEN))
        add(f"blk.{i}.ffn_down.weight", (HIDDEN, FFN))
    add("output_norm.weight", (HIDDEN,), norm=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)
