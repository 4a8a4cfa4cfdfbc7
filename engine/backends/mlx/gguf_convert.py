"""Convert a GGUF file into a standard MLX model folder.

Every tensor is read memory-mapped, where the checked header (check_gguf) says it
lies, as the `gguf` package's reader would give it (gguf_tensors.file_tensors), and
turned into MLX's affine layout by `gguf_tensors`:
exactly where the source's groups are affine (Q4_0 … Q8_0, Q4_K, Q5_K),
re-quantized to more bits otherwise (Q6_K, Q2_K, Q3_K, IQ*). Tensor names,
config fields and llama.cpp's weight changes come from `gguf_arch`. The
tokenizer is rebuilt by `engine.models.gguf_tokenizer` and checked against
llama.cpp's algorithm on fixed multilingual strings; the result, and a label
saying what the file was and what it became, go into config.json. It knows
nothing about where files live or which model is the default.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from engine.backends.mlx.gguf_arch import adjust, build_config, check_architecture, mlx_name
from engine.backends.mlx.gguf_arch import name_map as gguf_name_map
from engine.backends.mlx.gguf_tensors import GROUP, convert_tensor, file_tensors, layout_for
from engine.errors import ModelError
from engine.models.gguf_check import GGUFInfo, check_gguf

GGUF_MAGIC = b"GGUF"
CONVERTED_MARKER = "logitscope_conversion.json"
CONVERTER_VERSION = 4  # 3: every quant type, five architectures, SentencePiece; 4: bits


def check_gguf_header(path: Path) -> GGUFInfo:
    """Validate the file's whole structure (pure Python), its architecture and
    that every tensor type can be read; raise ModelError naming the problem."""
    info = check_gguf(path)
    check_architecture(info.architecture)
    for type_name in info.tensor_types:
        try:
            layout_for(type_name)
        except ModelError as e:
            raise ModelError(f"{Path(path).name}: {e}") from None
    return info


def file_type_name(meta: dict, info: GGUFInfo) -> str:
    """What llama.cpp calls the file's quantization (Q4_K_M, Q8_0, F16, …)."""
    import gguf

    try:
        return (
            gguf.LlamaFileType(int(meta["general.file_type"]))
            .name.removeprefix("MOSTLY_")
            .removeprefix("ALL_")
        )
    except (KeyError, ValueError, TypeError):
        counts = Counter({t: n for t, n in info.tensor_types.items() if t not in ("F32",)})
        return counts.most_common(1)[0][0] if counts else "F32"


def read_tensors(path: Path, info: GGUFInfo, progress=None):
    """Every tensor of `path` in MLX layout under mlx-lm's names.

    Returns:
        (arrays: name -> numpy array, layouts: GGUF type -> the Layouts it became,
         rope_factors: config entries taken from rope-factor tensors)
    """
    arch = info.architecture
    names = gguf_name_map(arch, int(info.get("block_count")))
    tensors = file_tensors(path, info)
    arrays, layouts, rope = {}, {}, {}
    for n, tensor in enumerate(tensors):
        if progress:
            progress(
                f"Converting {tensor.name} ({tensor.tensor_type.name})…",
                0.5 + 0.4 * n / len(tensors),
            )
        target = mlx_name(names, tensor.name)
        parts, layout = convert_tensor(tensor)
        layouts.setdefault(tensor.tensor_type.name, set()).add(layout)
        if target is None:  # rope factors: configuration, not a weight
            key = "long_factor" if "long" in tensor.name else "short_factor"
            rope[key] = [float(x) for x in np.asarray(parts["weight"], np.float32).ravel()]
            continue
        base, _, suffix = target.rpartition(".")
        parts = adjust(arch, base, parts) if suffix == "weight" else parts
        for key, value in parts.items():
            arrays[f"{base}.{key}" if suffix == "weight" else target] = value
    return arrays, layouts, rope


def _fuse_split_attention(arrays: dict) -> dict:
    """phi3 files with separate q/k/v: mlx-lm's phi3 wants one qkv_proj."""
    for key in [k for k in arrays if ".self_attn.q_proj." in k]:
        parts = [arrays.pop(key.replace("q_proj", p)) for p in ("q_proj", "k_proj", "v_proj")]
        arrays[key.replace("q_proj", "qkv_proj")] = np.concatenate(parts, axis=0)
    return arrays


def conversion_label(file_type: str, layouts: dict, arrays: dict) -> str:
    """e.g. "GGUF Q4_K_M → MLX 4/5/8-bit, group 32 (Q6_K re-quantized to 8-bit)"."""
    every = [lay for group in layouts.values() for lay in group]
    bits = sorted({lay.bits for lay in every if lay.bits})
    if bits:
        made = f"MLX {'/'.join(map(str, bits))}-bit, group {GROUP}"
    else:
        made = "MLX " + "/".join(sorted({str(a.dtype) for a in arrays.values()}))
    redone = []
    for t, group in sorted(layouts.items()):
        widths = sorted({lay.bits for lay in group if lay.bits and not lay.exact})
        if widths:
            redone.append(f"{t} re-quantized to {'/'.join(map(str, widths))}-bit")
    return f"GGUF {file_type} → {made}" + (f" ({'; '.join(redone)})" if redone else "")


def is_converted(out_dir: Path, digest: str) -> bool:
    """True if `out_dir` holds this converter's output for the source with `digest`."""
    marker = out_dir / CONVERTED_MARKER
    if not marker.exists() or not (out_dir / "model.safetensors").exists():
        return False
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info == _marker_info(info.get("source", ""), digest)


def converted_by_current(out_dir: Path) -> bool:
    """True if `out_dir` was written by this converter version (older ones are
    converted again from the source, which keeps its content-hash key)."""
    try:
        info = json.loads((out_dir / CONVERTED_MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("converter_version") == CONVERTER_VERSION


def _marker_info(name: str, digest: str) -> dict:
    return {"converter_version": CONVERTER_VERSION, "source": name, "sha256": digest}


def convert_gguf(
    source: Path,
    out_dir: Path,
    digest: str | None = None,
    progress=None,
    info: GGUFInfo | None = None,
) -> bool:
    """Convert `source` GGUF into an MLX model folder at `out_dir`.

    The folder is written to a temporary sibling, checked (the converted model
    must load and give finite, non-degenerate predictions) and only then renamed
    into place, so a failed or damaged conversion never replaces anything.

    Args:
        digest: the source's sha256 (computed here when not given).
        progress: optional (message, fraction) callback.
        info: the source's check_gguf_header, when the caller has just taken it
            (taken here when not given: it parses every metadata field again).

    Returns:
        True if a conversion ran, False if `out_dir` was already up to date.
    """
    import mlx.core as mx

    from engine.models.gguf_reference_tokenizer import check_tokenizer
    from engine.models.gguf_tokenizer import build_tokenizer_config, build_tokenizer_json
    from engine.store.file_hash import content_hash

    source, out_dir = Path(source), Path(out_dir)
    digest = digest or content_hash(source, progress)
    if is_converted(out_dir, digest):
        return False
    info = info or check_gguf_header(source)
    meta = info.metadata
    arrays, layouts, rope = read_tensors(source, info, progress)
    if info.architecture == "phi3":
        arrays = _fuse_split_attention(arrays)
    config = build_config(meta, "lm_head.weight" in arrays, rope or None)
    if progress:
        progress("Rebuilding and checking the tokenizer…", 0.9)
    tokenizer_json = build_tokenizer_json(meta)
    check = check_tokenizer(meta, tokenizer_json)
    bits = Counter(  # per quantized tensor: its packed width over its unpacked width
        arrays[k.replace(".scales", ".weight")].shape[-1] * 32 // (arrays[k].shape[-1] * GROUP)
        for k in arrays
        if k.endswith(".scales")
    )
    if bits:
        config["quantization"] = {"group_size": GROUP, "bits": bits.most_common(1)[0][0]}
    config["logitscope_source"] = {
        "format": "gguf",
        "file": source.name,
        "file_type": file_type_name(meta, info),
        "tensor_types": info.tensor_types,
        "label": conversion_label(file_type_name(meta, info), layouts, arrays),
        "license": meta.get("general.license"),
        "name": meta.get("general.name"),
        "tokenizer_check": check,
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=out_dir.parent))
    try:
        mx.save_safetensors(
            str(tmp / "model.safetensors"), {k: mx.array(v) for k, v in arrays.items()}
        )
        del arrays
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        (tmp / "tokenizer.json").write_text(tokenizer_json)
        tok_cfg = build_tokenizer_config(meta, config["max_position_embeddings"])
        (tmp / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2))
        if progress:
            progress(f"Checking the converted {source.name}…", 0.93)
        from engine.backends.mlx.model_check import check_converted_model

        check_converted_model(tmp, source.name)
        (tmp / CONVERTED_MARKER).write_text(json.dumps(_marker_info(source.name, digest)))
        if out_dir.exists():  # an older conversion of this same source: replace it
            old = out_dir.with_name(f".old-{out_dir.name}-{os.getpid()}")
            out_dir.rename(old)
            tmp.rename(out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return True
