"""Names people read: "Gemma 3 270M · Q4_K_M" rather than a hashed folder name, and a
server's model by a short name rather than a full file-system path.

Built from the model's own metadata: the GGUF's `general.name` and file type (kept
in config.json's `logitscope_source` when converted), the parameter count and the
quantization. The full name or id stays available for tooltips.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HASHED = re.compile(r"-[0-9a-f]{8,}$")  # converted GGUF folders end with a content hash
SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)([mMbBkK])(?![a-zA-Z])")
MODEL_SUFFIXES = (".gguf", ".bin", ".safetensors")


def short_model_id(model_id: str) -> str:
    """A server's model id without its folders and file extension.

    Args:
        model_id: as the server lists it, e.g. "/models/qwen2.5-0.5b-q4_k_m.gguf".

    Returns:
        e.g. "qwen2.5-0.5b-q4_k_m"; the id itself when nothing is left.
    """
    last = model_id.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    for suffix in MODEL_SUFFIXES:
        if last.lower().endswith(suffix):
            last = last[: -len(suffix)]
    return last or model_id


def size_label(parameters: int | None) -> str:
    """135M, 1.5B … from a parameter count ('' when unknown)."""
    if not parameters:
        return ""
    if parameters >= 1e9:
        return f"{parameters / 1e9:.3g}B"
    return f"{parameters / 1e6:.0f}M"


def _source(path: str) -> dict:
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    source = config.get("logitscope_source") if isinstance(config, dict) else None
    return source if isinstance(source, dict) else {}


def quant_label(quantization: str, source: dict | None = None) -> str:
    """The short quantization: the GGUF file type (Q4_K_M) or "4-bit", "float16"."""
    source = source or {}
    if isinstance(source.get("file_type"), str) and source["file_type"]:
        return source["file_type"]
    m = re.match(r"GGUF (\S+) →", quantization) or re.match(r"(\d+)-bit", quantization)
    if m:
        return m.group(1) if quantization.startswith("GGUF") else f"{m.group(1)}-bit"
    return quantization


def display_name(name: str, path: str, quantization: str, parameters: int | None = None) -> str:
    """What the model picker shows for a local model.

    Args:
        name: the catalogue's name (folder name or Hugging Face repo id).
        path: the model folder (its config.json is read for the GGUF's own name).
        quantization: the catalogue's quantization label.
        parameters: the parameter count, if known.

    Returns:
        e.g. "Gemma 3 270M · Q4_K_M" or "SmolLM2-135M-Instruct · Q4_1".
    """
    source = _source(path)
    base = name.rsplit("/", 1)[-1]
    meta = source.get("name")
    if HASHED.search(base) and isinstance(meta, str) and meta.strip():
        base = meta.strip()
    base = SIZE.sub(lambda m: m.group(1) + m.group(2).upper(), base)
    size = size_label(parameters)
    if size and not SIZE.search(base):
        base = f"{base} {size}"
    quant = quant_label(quantization, source)
    if quant and quant.lower().replace("-", "") not in base.lower().replace("-", ""):
        return f"{base} · {quant}"
    return base


def model_name(model) -> str:
    """The one name every view gives a run's model (History, Inside, exports): the
    picker's `display_name` for a local model, `short_model_id` for a server's.

    Args:
        model: a ModelRecord, its dict as the journal keeps it, or None.

    Returns:
        e.g. "Gemma 3 270M · Q4_K_M"; "?" when the model is not known.
    """
    if model is None:
        return "?"
    get = model.get if isinstance(model, dict) else lambda key, d=None: getattr(model, key, d)
    name = get("name") or ""
    if not name:
        return "?"
    if get("backend", "mlx") != "mlx":
        return short_model_id(name)
    label = display_name(name, get("path") or "", get("quantization") or "", get("parameters"))
    return label if not HASHED.search(label) else HASHED.sub("", label)
