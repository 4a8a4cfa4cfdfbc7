"""A small quantized model's float32 copy kept on disk, so that an engine started later
reads it instead of dequantizing again.

Each engine process (every Inside and Lab window, each restart and command) dequantized
its model afresh: about 0.7 s of CPU for SmolLM2 135M, 1.7 s for Gemma 3 270M. Reading
SmolLM2's 538 MB copy back takes about 0.15 s (from the page cache). Safetensors keep
float32 bit for bit, so the copy is exactly what dequantizing gives.

The copies live in runtime/float32/ (runtime_cache.runtime_dir), named by a hash of the
model's folder and its weight files' sizes and times: a rewritten model is another name.
A copy is written the second time a model is dequantized (the first leaves a mark), so
a model loaded once, or a folder made for one experiment, costs no disk. At most KEEP
copies are kept (the least recently used goes first), each at most
MAX_BYTES, and only while the disk keeps FREE_AFTER of its space (at least MIN_FREE
bytes) free. A copy that cannot
be read, or does not fit the model, is deleted and the model is dequantized as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import mlx.core as mx

from engine.store.runtime_cache import copy_name, prune_copies

KEEP = 2  # copies kept, most recently used first
MARKS = 32  # models marked as dequantized once, most recent first
MAX_BYTES = 2_000_000_000  # a larger model's copy is not written
FREE_AFTER = 0.05  # share of the disk left free after writing a copy
MIN_FREE = 4_000_000_000  # ... and never less than this


def folder() -> Path:
    """Where the copies are kept."""
    from engine.store.runtime_cache import runtime_dir

    return runtime_dir() / "float32"


def path_for(key: tuple) -> Path:
    """The copy of the weights named `key` (float32_weights.weights_key)."""
    return folder() / copy_name(key, ".safetensors")


def read(key: tuple, expected: dict[str, tuple]) -> list[tuple[str, mx.array]] | None:
    """The kept copy of `key`, if there is one that fits `expected` ({name: shape}).

    Returns:
        (name, float32 array) pairs, or None (no copy, or a damaged one, now deleted).
    """
    path = path_for(key)
    if not path.is_file():
        return None
    try:
        arrays = mx.load(str(path))
        mx.eval(list(arrays.values()))  # read here, where a short file is caught
    except Exception:  # noqa: BLE001 - truncated or not safetensors: dequantize instead
        path.unlink(missing_ok=True)
        return None
    fits = arrays.keys() == expected.keys() and all(
        tuple(a.shape) == tuple(expected[k]) and a.dtype == mx.float32 for k, a in arrays.items()
    )
    if not fits:
        path.unlink(missing_ok=True)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: pruned last
    return list(arrays.items())


def write(key: tuple, arrays: list[tuple[str, mx.array]]) -> None:
    """Keep a copy of `arrays` for `key` if it was dequantized before (else mark it), is
    small enough and the disk has room. Never raises: a copy not written only means the
    next engine dequantizes again."""
    size = sum(a.nbytes for _k, a in arrays)
    if size > MAX_BYTES:
        return
    path = path_for(key)
    mark = path.with_suffix(".seen")
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.partial.safetensors")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not mark.exists():
            mark.touch()
            prune_copies(path.parent, "*.seen", MARKS)
            return
        disk = shutil.disk_usage(path.parent)
        if disk.free - size < max(MIN_FREE, FREE_AFTER * disk.total):
            return
        mx.save_safetensors(str(tmp), dict(arrays))
        os.replace(tmp, path)
        prune_copies(path.parent, "*.safetensors", KEEP)
    except Exception:  # noqa: BLE001 - MLX says a failed write as RuntimeError: no copy
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
