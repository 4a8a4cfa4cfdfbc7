"""The float32 weights of the last model dequantized in this process, shared with the
next copy of the same weights.

The Lab loads its model again for each part of an experiment: a fresh reference for each
re-quantized variant, the target and its draft, the teacher and its student. Each copy
was dequantized afresh: about 0.7 s of CPU for SmolLM2 135M, 2 s for Gemma 3 270M. MLX
arrays are values: re-quantizing a copy, swapping its products onto BLAS or a training
step makes new arrays and leaves these as they were, so every copy can hold the same
ones, exactly the arrays a fresh dequantization would give.

One model is kept, named by its folder and its weight files' sizes and times; a load of
another model releases it first (`release_other`), so its memory is free for the next.
An engine started later reads the copy float32_file keeps on disk instead.
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_unflatten

_KEPT: dict[tuple, list[tuple[str, mx.array]]] = {}


def weights_key(folder: Path) -> tuple | None:
    """Names a folder's weights as they are on disk now (a rewritten file is another);
    None when they cannot be read (nothing is shared: the load says what is wrong)."""
    from engine.store.file_hash import folder_files_key

    try:
        return folder_files_key(folder, "*.safetensors")
    except OSError:
        return None


def release_other(key: tuple | None) -> None:
    """Drop the kept weights unless they are `key`'s."""
    if key not in _KEPT:
        _KEPT.clear()


def fill(model: nn.Module, key: tuple | None) -> None:
    """Give a dequantized model (lazy, not yet computed) its float32 arrays: those of a
    copy kept in this process, else the copy kept on disk (float32_file), else its own,
    computed now, then kept in both places.

    Args:
        model: the model after dequantize_model, before anything is evaluated.
        key: names its weights (weights_key); None: compute, keep nothing.
    """
    from engine.backends.mlx import float32_file

    kept = _KEPT.get(key) if key is not None else None
    if kept is not None:
        model.update(tree_unflatten(kept))
        return
    model.set_dtype(mx.float32)
    stored = None
    if key is not None:
        expected = {k: tuple(v.shape) for k, v in tree_flatten(model.parameters())}
        stored = float32_file.read(key, expected)
    if stored is not None:
        model.update(tree_unflatten(stored))
    mx.eval(model.parameters())
    if key is None:
        return
    _KEPT.clear()
    _KEPT[key] = tree_flatten(model.parameters())
    if stored is None:
        float32_file.write(key, _KEPT[key])
