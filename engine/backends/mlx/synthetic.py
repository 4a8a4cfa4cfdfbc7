"""A near-free model for measuring the engine's own per-token cost.

The default model's tokenizer and 49,152-token vocabulary with one transformer
layer of hidden size 64 and random weights: its forward pass costs almost
nothing, so what a decode step costs beyond bare mlx-lm is the engine's
bookkeeping (sampling statistics, records, the pipe). `logitscope bench
--synthetic` builds it in a temporary folder and runs the usual comparison.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def build_near_free_model(folder: Path, source: Path, seed: int = 0) -> Path:
    """Write the near-free model into `folder`, with `source`'s tokenizer and vocabulary.

    Args:
        folder: where to write it (created).
        source: an MLX model folder (the default model's) whose tokenizer is copied.
        seed: the random weights' seed.

    Returns:
        `folder`.
    """
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import llama

    folder.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, folder / name)
    src = json.loads((source / "config.json").read_text())
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 1,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "vocab_size": src.get("vocab_size", 49152),
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
        "bos_token_id": src.get("bos_token_id"),
        "eos_token_id": src.get("eos_token_id"),
    }
    (folder / "config.json").write_text(json.dumps(config))
    mx.random.seed(seed)
    model = llama.Model(llama.ModelArgs.from_dict(config))
    params = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(str(folder / "model.safetensors"), params)
    return folder
