"""A small student model for a teacher: its configuration, its initial weights, its folder.

The student is mlx-lm's llama model with a small ModelArgs (a few layers, width 16-1024,
head size 32 or the width itself when smaller, a 4x MLP), the teacher's vocabulary and
tokenizer, tied input and output embeddings. Its embedding starts as the teacher's
projected to the student's width by a seeded random matrix (so tokens the teacher
puts near each other start near each other), or random ("learned"). Saved, it is a
standard MLX model folder (config.json with model_type llama and the training settings
under "logitscope_distilled", model.safetensors in float32, the teacher's tokenizer
files) that the engine's loader opens like any other model.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten
from mlx_lm.models import llama

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "chat_template.jinja",
)
HEAD = 32  # attention head size (the width itself when smaller)
META_KEY = "logitscope_distilled"


def student_config(teacher_folder: Path, vocab_size: int, width: int, layers: int) -> dict:
    """The student's config.json (without its training settings).

    Args:
        teacher_folder: the teacher's model folder (its start/end token ids and context).
        vocab_size: the teacher's output width.
        width, layers: the student's hidden size and layer count.
    """
    teacher = json.loads((teacher_folder / "config.json").read_text())
    heads = max(1, width // HEAD)
    config = {
        "model_type": "llama",
        "hidden_size": width,
        "num_hidden_layers": layers,
        "intermediate_size": 4 * width,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "vocab_size": int(vocab_size),
        "max_position_embeddings": int(teacher.get("max_position_embeddings") or 2048),
        "tie_word_embeddings": True,
    }
    for key in ("bos_token_id", "eos_token_id"):
        if key in teacher:
            config[key] = teacher[key]
    return config


def build_student(config: dict, teacher_model, embedding: str, seed: int):
    """A fresh student (float32) from `config`, seeded.

    Args:
        config: student_config's dict.
        teacher_model: the teacher's mlx-lm model (its embedding, when projected).
        embedding: "projected" or "learned" (mlx's own random init).
        seed: seeds every random weight and the projection.

    Returns:
        The llama.Model, evaluated.
    """
    mx.random.seed(seed)
    model = llama.Model(llama.ModelArgs.from_dict(config))
    if embedding == "projected":
        table = teacher_embedding(teacher_model, config["vocab_size"])
        if table is not None:  # (V, D) -> (V, W)
            rng = np.random.default_rng(seed)
            proj = rng.standard_normal((table.shape[1], config["hidden_size"])).astype(np.float32)
            emb = table @ mx.array(proj)
            emb = emb * (math.sqrt(1.0 / config["hidden_size"]) / (mx.std(emb) + 1e-12))
            model.model.embed_tokens.weight = emb.astype(mx.float32)
    mx.eval(model.parameters())
    return model


def teacher_embedding(teacher_model, vocab_size: int) -> mx.array | None:
    """The teacher's (V, D) input embedding as float32 (dequantized if need be), or None
    for a model without one where mlx-lm's llama-like models keep it."""
    body = getattr(teacher_model, "model", None)
    table = getattr(body, "embed_tokens", None)
    if table is None:
        return None
    rows = table(mx.arange(vocab_size)[None])[0]  # (V, D); works for quantized tables too
    return rows.astype(mx.float32)


def parameter_count(model) -> int:
    """The model's parameter count."""
    return int(sum(v.size for _k, v in tree_flatten(model.parameters())))


def student_name(teacher: str, kind: str) -> str:
    """`<teacher>-student-<kind>-<YYYYMMDD-HHMMSS>`."""
    return f"{teacher}-student-{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def save_student(model, config: dict, meta: dict, teacher_folder: Path, out: Path) -> Path:
    """Write the student as an MLX model folder at `out` (or `out-2`… if taken).

    Written to a temporary folder first and renamed into place; nothing is overwritten.

    Args:
        model: the trained student.
        config: its config (the training settings are added under META_KEY).
        meta: the training settings (plain values).
        teacher_folder: where its tokenizer files are copied from.
        out: the folder wanted.

    Returns:
        The folder written.
    """
    n, final = 1, out
    while final.exists():
        n += 1
        final = out.with_name(f"{out.name}-{n}")
    tmp = final.with_name(f".{final.name}.partial-{os.getpid()}")
    tmp.mkdir(parents=True)
    try:
        (tmp / "config.json").write_text(json.dumps({**config, META_KEY: meta}, indent=2))
        weights = dict(tree_flatten(model.parameters()))
        mx.save_safetensors(str(tmp / "model.safetensors"), weights, metadata={"format": "mlx"})
        for name in TOKENIZER_FILES:
            if (teacher_folder / name).is_file():
                shutil.copy(teacher_folder / name, tmp / name)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
