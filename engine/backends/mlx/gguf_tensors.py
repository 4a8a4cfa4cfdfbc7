"""Turn any GGUF tensor into MLX's affine-quantized layout, exactly where the
source allows it.

Every llama.cpp type whose 32-element groups hold integers on an affine grid
(value = scale * q + bias) is repacked bit for bit: Q4_0, Q4_1, Q5_0, Q5_1,
Q8_0 (group 32) and the K-quants Q4_K and Q5_K (their 6-bit sub-block scales
and mins give each group of 32 its own scale and bias). Types without that
shape (Q2_K, Q3_K and Q6_K use groups of 16; the IQ types use non-uniform
grids) are dequantized with the `gguf` package (llama.cpp's own reference
code) and re-quantized with MLX to more bits than the source: the fewest (from
`LAYOUTS`' starting width up to 8) whose rms error stays under 1 % of the
weights' rms, so re-quantization adds little to the source's own error. Float tensors stay as
they are. The per-type choice is `LAYOUTS`; `Layout.exact` says which kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import ModelError

GROUP = 32
_ROWS_PER_CHUNK = 8192  # bounds the float32 working set on big embeddings


@dataclass(frozen=True)
class Layout:
    """How a GGUF tensor type converts: `bits` (None: a float tensor) and `exact`."""

    bits: int | None  # None: stays a float tensor
    exact: bool  # True: the source's own integers and scales, repacked


LAYOUTS = {
    "F32": Layout(None, True),
    "F16": Layout(None, True),
    "BF16": Layout(None, True),
    "Q4_0": Layout(4, True),
    "Q4_1": Layout(4, True),
    "Q5_0": Layout(5, True),
    "Q5_1": Layout(5, True),
    "Q8_0": Layout(8, True),
    "Q4_K": Layout(4, True),
    "Q5_K": Layout(5, True),
    "Q2_K": Layout(4, False),
    "Q3_K": Layout(5, False),
    "Q6_K": Layout(8, False),
    "IQ1_S": Layout(4, False),
    "IQ1_M": Layout(4, False),
    "IQ2_XXS": Layout(5, False),
    "IQ2_XS": Layout(5, False),
    "IQ2_S": Layout(5, False),
    "IQ3_XXS": Layout(5, False),
    "IQ3_S": Layout(5, False),
    "IQ4_NL": Layout(6, False),
    "IQ4_XS": Layout(6, False),
    "TQ1_0": Layout(8, False),
    "TQ2_0": Layout(8, False),
    "MXFP4": Layout(8, False),
}


def layout_for(type_name: str) -> Layout:
    """The MLX layout a GGUF tensor type becomes; ModelError if none reads it."""
    if type_name not in LAYOUTS:
        raise ModelError(
            f"tensor type {type_name} cannot be read: neither MLX nor the gguf package "
            "decodes it; use another quantization of this model (Q4_K_M, Q8_0, …)"
        )
    return LAYOUTS[type_name]


def _f16(raw: np.ndarray, at: int) -> np.ndarray:
    return raw[:, at : at + 2].copy().view(np.float16)[:, 0].astype(np.float32)


def _k_scale_min(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 8 six-bit (scale, min) pairs of each Q4_K/Q5_K super-block (ggml's
    get_scale_min_k4), as (n_blocks, 8) integer arrays."""
    s = raw[:, 4:16].astype(np.uint16)
    sc = np.empty((len(raw), 8), np.uint16)
    mn = np.empty_like(sc)
    sc[:, :4], mn[:, :4] = s[:, 0:4] & 63, s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), mn.astype(np.float32)


def group_scale_bias(type_name: str, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-32-group (scale, bias) of an exact type, from its raw blocks.

    Args:
        raw: (n_blocks, bytes_per_block) uint8.
    Returns:
        Two float32 arrays of shape (n_blocks * groups_per_block,).
    """
    d = _f16(raw, 0)
    if type_name in ("Q4_0", "Q5_0", "Q8_0"):
        offset = {"Q4_0": 8, "Q5_0": 16, "Q8_0": 128}[type_name]  # q is stored q - offset
        return d, -offset * d
    if type_name in ("Q4_1", "Q5_1"):
        return d, _f16(raw, 2)
    if type_name in ("Q4_K", "Q5_K"):
        sc, mn = _k_scale_min(raw)
        return (d[:, None] * sc).ravel(), (-_f16(raw, 2)[:, None] * mn).ravel()
    raise ValueError(type_name)


def pack_bits(q: np.ndarray, bits: int) -> np.ndarray:
    """Pack unsigned integers < 2**bits along the last axis into uint32 words,
    as MLX lays them out (a little-endian bit stream)."""
    rows, cols = q.shape
    if 8 % bits == 0:  # whole values per byte: shift and OR them (19x faster than bit
        per = 8 // bits  # planes on SmolLM2's embedding: scripts/bench_gguf_read.py)
        values = q.astype(np.uint8).reshape(rows, cols // per, per)
        packed = values[..., 0].copy()
        for i in range(1, per):
            packed |= values[..., i] << np.uint8(i * bits)
        return packed.view(np.uint32)
    planes = (q[..., None].astype(np.uint8) >> np.arange(bits, dtype=np.uint8)) & 1
    packed = np.packbits(planes.reshape(rows, cols * bits), axis=-1, bitorder="little")
    return packed.view(np.uint32)


def _block_rows(tensor) -> tuple[np.ndarray, int]:
    """The tensor's raw bytes as (rows, bytes_per_row) and its row length."""
    import gguf

    qtype = tensor.tensor_type
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    cols = int(tensor.shape[0])  # GGUF lists the fastest dimension first
    if cols % block:
        raise ModelError(f"tensor {tensor.name} has rows of {cols}, not whole {block}-blocks")
    raw = np.asarray(tensor.data, dtype=np.uint8).reshape(-1, cols // block * size)
    return raw, cols


def _exact_chunk(type_name: str, raw: np.ndarray, cols: int, bits: int):
    import gguf

    qtype = gguf.GGMLQuantizationType[type_name]
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rows = raw.shape[0]
    values = gguf.quants.dequantize(raw, qtype).reshape(rows * cols // GROUP, GROUP)
    scale, bias = group_scale_bias(type_name, raw.reshape(-1, size))
    safe = np.where(scale == 0, 1.0, scale)
    q = np.rint((values - bias[:, None]) / safe[:, None])
    q = np.clip(np.where(scale[:, None] == 0, 0, q), 0, 2**bits - 1).astype(np.uint8)
    scales = scale.reshape(rows, cols // GROUP).astype(np.float16)
    biases = bias.reshape(rows, cols // GROUP).astype(np.float16)
    return pack_bits(q.reshape(rows, cols), bits), scales, biases


MAX_REQUANT_ERROR = 0.01  # re-quantization's rms error, as a fraction of the weights' rms
_MORE_BITS = (4, 5, 6, 8)


def _requant(type_name: str, raw: np.ndarray, cols: int, bits: int):
    """Dequantize with gguf, re-quantize with MLX at the fewest bits (from `bits`
    up) whose rms error stays under MAX_REQUANT_ERROR of the weights' rms."""
    import gguf
    import mlx.core as mx

    qtype = gguf.GGMLQuantizationType[type_name]
    values = mx.array(gguf.quants.dequantize(raw, qtype).reshape(raw.shape[0], cols))
    scale = float(mx.sqrt(mx.mean(values * values)).item()) or 1.0
    for b in [n for n in _MORE_BITS if n >= bits]:
        w, s, z = mx.quantize(values.astype(mx.float16), group_size=GROUP, bits=b)
        back = mx.dequantize(w, s, z, group_size=GROUP, bits=b).astype(mx.float32)
        err = float(mx.sqrt(mx.mean((back - values) ** 2)).item()) / scale
        if err <= MAX_REQUANT_ERROR or b == _MORE_BITS[-1]:
            return (np.array(w), np.array(s), np.array(z)), b
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class FileTensor:
    """One tensor of a GGUF file: what convert_tensor reads of a `gguf.GGUFReader`
    tensor (the same names, shapes and memory-mapped data), built from the header
    check_gguf already parsed."""

    name: str
    tensor_type: object  # gguf.GGMLQuantizationType
    shape: np.ndarray  # GGUF order: fastest-varying dimension first
    data: np.ndarray  # read-only view of the file: typed for float and integer types,
    # the raw bytes (rows of blocks) for quantized ones, as GGUFReader gives them


_ITEM_TYPES = {
    "F16": np.float16, "F32": np.float32, "F64": np.float64,
    "I8": np.int8, "I16": np.int16, "I32": np.int32, "I64": np.int64,
}  # fmt: skip


def file_tensors(path, info) -> list[FileTensor]:
    """Every tensor of the GGUF file at `path`, in header order, as `gguf.GGUFReader`
    lists them. `info` is the file's check_gguf: its header was parsed and checked
    there (types, shapes, offsets within the file), so it is not read again. (The
    reader parses every metadata field on opening: SmolLM2's, with its tokenizer's
    100k strings, in 2.1 s on a 2-core CPU; these views in 1.5 ms:
    scripts/bench_gguf_read.py.)"""
    import gguf

    whole = np.memmap(path, dtype=np.uint8, mode="r")
    out = []
    for t in info.tensors:
        qtype = gguf.GGMLQuantizationType[t.type_name]
        start = info.data_start + t.offset
        raw = whole[start : start + t.nbytes]
        dims = tuple(reversed(t.shape))
        item = _ITEM_TYPES.get(t.type_name)
        if item is not None:
            data = raw.view(item).reshape(dims)
        else:
            data = raw.reshape(gguf.quants.quant_shape_to_byte_shape(dims, qtype))
        shape = np.array(t.shape, dtype=np.uint64)
        out.append(FileTensor(t.name, qtype, shape, data))
    return out


def convert_tensor(tensor) -> tuple[dict[str, np.ndarray], Layout]:
    """One GGUF tensor (a FileTensor, or a `gguf.GGUFReader` tensor) as MLX arrays.

    Returns:
        ({"weight": …} or {"weight", "scales", "biases"}, its Layout). Shapes are
        numpy order (rows, cols), as MLX expects.
    """
    type_name = tensor.tensor_type.name
    layout = layout_for(type_name)
    shape = tuple(int(n) for n in reversed(tensor.shape))
    if layout.bits is None:
        data = np.asarray(tensor.data)
        if type_name == "BF16":  # numpy has no bfloat16: widen to float32 exactly
            data = (data.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        return {"weight": data.reshape(shape)}, layout
    raw, cols = _block_rows(tensor)
    if len(shape) > 2 or cols % GROUP:
        raise ModelError(f"tensor {tensor.name} ({type_name}, {list(shape)}) has no MLX layout")
    if layout.exact:
        parts = [
            _exact_chunk(type_name, raw[i : i + _ROWS_PER_CHUNK], cols, layout.bits)
            for i in range(0, raw.shape[0], _ROWS_PER_CHUNK)
        ]
        w, s, b = (np.concatenate(p) for p in zip(*parts, strict=True))
    else:  # whole tensor: one bit width for all its rows
        (w, s, b), bits = _requant(type_name, raw, cols, layout.bits)
        layout = Layout(bits, False)
    if len(shape) == 1:
        w, s, b = w[0], s[0], b[0]
    return {"weight": w, "scales": s, "biases": b}, layout
