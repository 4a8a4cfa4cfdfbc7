"""A converted model must answer sanely before it is kept.

A damaged file can convert without an error and then produce nothing but one
token. `check_converted_model` loads the new folder with mlx-lm and runs one
teacher-forced pass over a fixed sentence (a quantized model on the CPU as the
engine's stored path runs it: float32 activations, the many-row products on BLAS):
the logits must be finite, and the model must not predict the same token at every
position (a collapsed model).
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import ModelError

PROBE = "The quick brown fox jumps over the lazy dog. Paris is the capital of France, and"
MIN_POSITIONS = 6


def check_converted_model(folder: Path, source_name: str) -> None:
    """Raise ModelError if the model in `folder` cannot load or answers degenerately."""
    import mlx.core as mx
    from mlx_lm import load

    try:
        model, tokenizer = load(str(folder))
    except Exception as e:  # noqa: BLE001 - any load failure means a bad conversion
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise ModelError(f"{source_name} converted but does not load ({first})") from e
    ids = tokenizer.encode(PROBE)[:64]
    if len(ids) < MIN_POSITIONS:
        return  # a vocabulary this coarse cannot be probed; nothing to conclude
    from engine.backends.mlx.compute_path import stored_float32
    from engine.backends.mlx.quantized_blas import blas_products

    # A quantized model on the CPU runs as the engine's stored path runs it (float32 scales
    # and activations), the probe's rows on BLAS: MLX's quantized kernel costs about one
    # single-row product per row (SmolLM2's whole check, its load included: 2.8 s -> 1.3 s).
    # An unquantized one stays as stored, as the engine keeps it (no float32 copy of a
    # float16 model's weights).
    if blas_products(model):  # 0: nothing quantized, or not on the CPU
        stored_float32(model)
    logits = model(mx.array(ids)[None])[0].astype(mx.float32)  # (L, V)
    finite = bool(mx.all(mx.isfinite(logits)).item())
    if not finite:
        raise ModelError(
            f"{source_name} converted into a model whose outputs are not finite numbers: "
            "the file's weights are damaged; download it again"
        )
    top = mx.argmax(logits, axis=-1).tolist()
    if len(set(top)) == 1:
        token = tokenizer.decode([top[0]])
        raise ModelError(
            f"{source_name} converted into a model that predicts {token!r} at every "
            "position: the file's weights are damaged; download it again"
        )
