"""A tiny random-weight llama model folder, built in seconds for unit tests.

Byte-level BPE tokenizer with no merges (256 byte tokens + 2 specials), the
standard MLX folder layout, so it loads through the same code as real models.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten
from mlx_lm.models import llama

TINY_CONTEXT = 64
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _byte_vocab() -> list[str]:
    from tokenizers.pre_tokenizers import ByteLevel

    return sorted(ByteLevel.alphabet())


# A thinking model's template: the generation prompt opens the thinking block, as
# DeepSeek-R1's and Qwen3's (thinking on) do; past answers are sent without it.
THINKING_TEMPLATE = CHAT_TEMPLATE.replace(
    "<|im_start|>assistant\n{% endif %}", "<|im_start|>assistant\n<think>\n{% endif %}"
)


def build_tiny_model(folder: Path, seed: int = 0, thinking: bool = False) -> Path:
    """Write config, random weights and tokenizer files to `folder`; with `thinking`,
    the vocabulary gains `<think>`/`</think>` and the template opens the block."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    chars = _byte_vocab()
    vocab = {c: i for i, c in enumerate(chars)}
    specials = ["<|im_start|>", "<|im_end|>"] + (["<think>", "</think>"] if thinking else [])
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True) for s in specials])
    tok.save(str(folder / "tokenizer.json"))
    n_vocab = len(chars) + len(specials)
    config = {
        "model_type": "llama",
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "intermediate_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "vocab_size": n_vocab,
        "max_position_embeddings": TINY_CONTEXT,
        "tie_word_embeddings": True,
        "eos_token_id": vocab.__len__() + 1,
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<|im_start|>",
                "eos_token": "<|im_end|>",
                "chat_template": THINKING_TEMPLATE if thinking else CHAT_TEMPLATE,
            }
        )
    )
    mx.random.seed(seed)
    args = llama.ModelArgs.from_dict(config)
    model = llama.Model(args)
    # Sharper logits than the default init, so distributions are not flat.
    params = {k: v * 2 for k, v in tree_flatten(model.parameters())}
    mx.save_safetensors(str(folder / "model.safetensors"), params)
    return folder
