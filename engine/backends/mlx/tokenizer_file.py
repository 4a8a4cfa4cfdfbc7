"""A model's tokenizer, as mlx-lm built it, kept on disk so that a later engine reads it
instead of building it again.

Building mlx-lm's tokenizer parses tokenizer.json twice (mlx-lm reads its decoder,
transformers the whole), lists the vocabulary three times and maps every token for the
streaming detokenizer. For Gemma 3's 262k tokens that is 2.5-3.7 s of CPU here, paid by
every engine process that loads it (each Inside and Lab window, each restart and
command); reading the kept copy back takes about 1 s. SmolLM2's 49k tokens: about
0.3 s against 0.1 s.

The copies live in runtime/tokenizers/ (runtime_cache.runtime_dir), named by a hash of
the model's tokenizer files (names, sizes, times), the end-of-sequence ids asked for,
and the versions of Python, mlx-lm, transformers and tokenizers: a changed file or an
upgraded library is another name. At most KEEP copies are kept (the least recently used
goes first), each at most MAX_BYTES, written atomically. A copy that cannot be read, or
is not a tokenizer, is deleted and the tokenizer is built as before.

The copies are pickles, read only from this folder, which only the engine writes (as it
writes the models folder beside it).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from pathlib import Path

from engine.store.runtime_cache import copy_name, prune_copies

KEEP = 4  # copies kept, most recently used first
MAX_BYTES = 200_000_000  # a larger tokenizer's copy is not written


def folder() -> Path:
    """Where the copies are kept."""
    from engine.store.runtime_cache import runtime_dir

    return runtime_dir() / "tokenizers"


def key_of(files_key: tuple, eos_token_ids) -> tuple:
    """The name of a copy: the tokenizer files as they are (file_hash.folder_files_key),
    the eos ids asked for, and the versions of what builds and reads it."""
    import mlx_lm
    import tokenizers
    import transformers

    versions = [getattr(m, "__version__", None) for m in (mlx_lm, transformers, tokenizers)]
    return (files_key, repr(eos_token_ids), sys.version_info[:2], *versions)


def path_for(key: tuple) -> Path:
    return folder() / copy_name(key, ".pickle")


def read(key: tuple):
    """The kept tokenizer of `key`, or None (no copy, or a damaged one, now deleted)."""
    from mlx_lm.tokenizer_utils import TokenizerWrapper

    path = path_for(key)
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as f:
            tokenizer = pickle.load(f)
    except Exception:  # noqa: BLE001 - truncated, foreign or from other code: build it
        path.unlink(missing_ok=True)
        return None
    if not isinstance(tokenizer, TokenizerWrapper):
        path.unlink(missing_ok=True)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: pruned last
    return tokenizer


def write(key: tuple, tokenizer) -> None:
    """Keep `tokenizer` for `key`. Never raises: a copy not written only means the next
    engine builds it again."""
    path = path_for(key)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.partial.pickle")
    try:
        data = pickle.dumps(tokenizer, protocol=pickle.HIGHEST_PROTOCOL)
        if len(data) > MAX_BYTES:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
        prune_copies(path.parent, "*.pickle", KEEP)
    except Exception:  # noqa: BLE001 - unpicklable (some custom tokenizer) or no room
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
