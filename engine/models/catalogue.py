"""Finding, describing and loading models.

A model is named by a path (an MLX model folder or a `.gguf` file), by the
name of a folder under `models_dir()`, or by nothing (the default model). Every
failure becomes a ModelError with a one-line message; nothing here imports Qt.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import ModelError
from engine.models.default_model import DEFAULT_MODEL_NAME
from engine.models.load_options import kv_bytes_per_token
from engine.models.scan_guard import ScanLog, Skipped, clean_text
from engine.store.paths import models_dir

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch not found"
MAX_CONFIG_BYTES = 8_000_000  # a config.json is kilobytes; a bigger one is not a config
README_BYTES = 16_384  # the model card's front matter is at its top


@dataclass(frozen=True)
class ModelInfo:
    """What the model picker shows about one model."""

    name: str
    path: str
    architecture: str
    quantization: str
    size_bytes: int
    context_length: int
    parameters: int | None = None
    source: str = "MLX folder"  # GGUF file … | MLX folder | Hugging Face cache | LM Studio …
    license: str | None = None
    kv_shape: tuple[int, int, int] | None = None  # (layers, kv heads, head dim)

    def kv_bytes(self, tokens: int, bits: int | None = None) -> int | None:
        """The KV cache's bytes at `tokens` tokens (8/4 `bits`: quantized), if known."""
        if not self.kv_shape or not all(self.kv_shape):
            return None
        return kv_bytes_per_token(*self.kv_shape, bits) * tokens

    def details(self) -> str:
        """One line for the picker: everything known about this model."""
        params = f"{self.parameters / 1e6:,.0f} M parameters · " if self.parameters else ""
        licence = f" · licence: {self.license}" if self.license else ""
        return (
            f"{self.architecture} · {params}{self.quantization} · "
            f"{self.size_bytes / 1e6:,.0f} MB on disk · context {self.context_length:,} · "
            f"{self.source}{licence}"
        )


def _regular_size(path: Path) -> int | None:
    """The size of `path` if it is a regular file (a FIFO or device would block a read)."""
    try:
        st = path.stat()
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _read_config(folder: Path) -> dict:
    cfg = folder / "config.json"
    size = _regular_size(cfg)
    if size is None:
        raise ModelError(
            f"{folder} is not a model folder: it has no config.json "
            "(give an MLX model folder or a .gguf file)"
        )
    if size > MAX_CONFIG_BYTES:
        raise ModelError(f"{cfg} is {size:,} bytes: too large to be a model configuration")
    try:
        config = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise ModelError(f"{cfg} cannot be read as JSON: {e}") from e
    if not isinstance(config, dict):
        raise ModelError(f"{cfg} is not a model configuration (expected a JSON object)")
    return config


def _context_length(config: dict, cfg_path: Path) -> int:
    text = config.get("text_config")
    ctx = config.get("max_position_embeddings") or (
        text.get("max_position_embeddings") if isinstance(text, dict) else None
    )
    if ctx is None:
        return 2048
    if isinstance(ctx, bool) or not isinstance(ctx, int) or ctx <= 0:
        raise ModelError(
            f"{cfg_path} gives the context length as {ctx!r}; it must be a positive whole number"
        )
    return ctx


def _quantization_label(config: dict) -> str:
    """What the weights are, and for a converted GGUF what the file was."""
    q = config.get("quantization") or config.get("quantization_config")
    if not isinstance(q, dict) or not q:
        label = str(config.get("torch_dtype", "float16"))
    else:
        bits, group = q.get("bits"), q.get("group_size")
        label = f"{bits}-bit (group {group})" if bits else str(q.get("quant_method", "?"))
    source = config.get("logitscope_source")
    if isinstance(source, dict) and isinstance(source.get("label"), str):
        return source["label"]
    if isinstance(source, dict) and isinstance(source.get("tensor_types"), dict):
        types = source["tensor_types"]
        main = sorted((n, t) for t, n in types.items() if t not in ("F32", "F16"))
        if main:
            label = f"GGUF {'/'.join(t for _n, t in reversed(main))} → MLX {label}"
    return label


def count_parameters(weights: list[Path], config: dict) -> int | None:
    """Parameters from the safetensors headers (no weights read): a quantized
    matrix counts its unpacked size (groups x group size)."""
    from engine.models.hf_cache import safetensors_header

    q = config.get("quantization") if isinstance(config.get("quantization"), dict) else {}
    total = 0
    try:
        headers = [safetensors_header(w) for w in weights]
    except (OSError, ValueError, RecursionError, struct.error):
        return None
    if not all(isinstance(h, dict) for h in headers):
        return None
    tensors = {k: v for h in headers for k, v in h.items() if k != "__metadata__"}
    for name, t in tensors.items():
        shape = t.get("shape", [])
        if name.endswith((".scales", ".biases")):
            continue
        base = name.removesuffix(".weight")
        if f"{base}.scales" in tensors and shape:
            layer = q.get(base) if isinstance(q.get(base), dict) else q
            groups = tensors[f"{base}.scales"]["shape"]
            total += math.prod(groups) * int(layer.get("group_size", 64))
        else:
            total += math.prod(shape)
    return total or None


def _source(folder: Path, config: dict) -> str:
    source = config.get("logitscope_source")
    if isinstance(source, dict) and source.get("format") == "gguf":
        return f"GGUF file {source.get('file', '')}".strip()
    if "huggingface" in folder.parts or any(p.startswith("models--") for p in folder.parts):
        return "Hugging Face cache"
    return "MLX folder"


def _license(folder: Path, config: dict) -> str | None:
    source = config.get("logitscope_source")
    if isinstance(source, dict) and isinstance(source.get("license"), str):
        return source["license"]
    readme = folder / "README.md"  # a Hugging Face model card's front matter
    if _regular_size(readme) is None:
        return None
    try:
        with open(readme, "rb") as f:
            head = f.read(README_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in head.splitlines()[:40]:
        if line.startswith("license:"):
            return clean_text(line.split(":", 1)[1].strip())[:200] or None
    return None


def _kv_shape(config: dict) -> tuple[int, int, int] | None:
    """(layers, kv heads, head dim) from a Hugging Face config, if it says."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    cfg = {**config, **text}
    try:
        heads = int(cfg["num_attention_heads"])
        kv = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
        return int(cfg["num_hidden_layers"]), kv, head_dim
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def inspect_model(folder: Path, name: str | None = None) -> ModelInfo:
    """Describe an MLX model folder without loading its weights."""
    folder = Path(folder)
    config = _read_config(folder)
    weights = sorted(w for w in folder.glob("*.safetensors") if _regular_size(w) is not None)
    if not weights:
        raise ModelError(f"{folder} has no weights (*.safetensors files)")
    ctx = _context_length(config, folder / "config.json")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    arch = config.get("model_type") or text.get("model_type") or "unknown"
    return ModelInfo(
        name=clean_text(name or folder.name),
        path=str(folder.resolve()),
        architecture=clean_text(arch)[:100],
        quantization=clean_text(_quantization_label(config))[:200],
        size_bytes=sum(w.stat().st_size for w in weights),
        context_length=int(ctx),
        parameters=count_parameters(weights, config),
        source=clean_text(_source(folder, config)),
        license=_license(folder, config),
        kv_shape=_kv_shape(config),
    )


def inspect_found(found) -> ModelInfo:
    """Describe a model another tool keeps (engine/models/discovery.py) from its GGUF
    header or its MLX folder, without reading weights."""
    from engine.models.discovery import gguf_facts

    path = Path(found.path)
    if path.is_dir():
        return dataclasses.replace(inspect_model(path, found.name), source=found.source)
    facts = gguf_facts(path)
    return ModelInfo(
        name=found.name,
        path=str(path),
        architecture=facts["architecture"],
        quantization=f"GGUF {facts['file_type']}",
        size_bytes=path.stat().st_size,
        context_length=facts["context_length"],
        parameters=facts["parameters"],
        source=found.source,
        license=facts["license"],
        kv_shape=(facts["layers"], facts["kv_heads"], facts["head_dim"]),
    )


@dataclass(frozen=True)
class Listing:
    """The models found, and every item left out with its reason (the picker's
    tooltip and `logitscope models --verbose` show them)."""

    models: list[ModelInfo] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _why(e: Exception) -> str:
    """A reason in words for an item that could not be described."""
    if isinstance(e, ModelError):
        return clean_text(e)[:300]
    if isinstance(e, OSError):
        return f"it cannot be read ({clean_text(e.strerror or type(e).__name__).lower()})"
    return f"its description cannot be read ({type(e).__name__})"


_BAD_ITEM = (ModelError, OSError, ValueError, TypeError, KeyError, OverflowError, RecursionError)


def list_models_report(other_tools: bool = True) -> Listing:
    """Every model under `models_dir()` that looks openable (the default first),
    the MLX models in the local Hugging Face cache, then (with `other_tools`) the
    models other tools keep; one that cannot be read is left out and named."""
    from engine.models.hf_cache import cached_mlx_models

    log = ScanLog()
    out = Listing(skipped=log.skipped)
    try:
        folders = sorted(models_dir().iterdir())
    except OSError as e:
        out.skipped.append(Skipped(clean_text(models_dir()), "models folder", _why(e)))
        folders = []
    for folder in folders:
        if folder.is_dir() and not folder.name.startswith("."):
            try:
                out.models.append(inspect_model(folder))
            except _BAD_ITEM as e:  # one bad folder never hides the others
                out.skipped.append(Skipped(clean_text(folder), "models folder", _why(e)))
    out.models.sort(key=lambda m: m.name != DEFAULT_MODEL_NAME)
    for repo_id, folder in cached_mlx_models(log):
        try:
            out.models.append(inspect_model(folder, name=repo_id))
        except _BAD_ITEM as e:
            out.skipped.append(Skipped(clean_text(repo_id), "Hugging Face cache", _why(e)))
    if other_tools:
        found = list_discovered_report(log)
        out.models.extend(found.models)
    return out


def list_models(other_tools: bool = True) -> list[ModelInfo]:
    """The models of list_models_report(), without what was left out."""
    return list_models_report(other_tools).models


def list_discovered_report(log: ScanLog | None = None) -> Listing:
    """The models LM Studio, Ollama, the HF cache (GGUF), llama.cpp and the added
    folders keep, and each one left out (outside its folder, unreadable …) with why;
    `log` (a scan_guard.ScanLog) is shared with the caller's other scans."""
    from engine.models.discovery import discover_all

    found = discover_all(log)
    out = Listing(skipped=found.skipped)
    for f in found.found:
        try:
            out.models.append(inspect_found(f))
        except _BAD_ITEM as e:
            out.skipped.append(Skipped(f.name, f.source, _why(e)))
    return out


def list_discovered() -> list[ModelInfo]:
    """The models of list_discovered_report(), without what was left out."""
    return list_discovered_report().models
