"""Quantized layers whose many-row products run on BLAS, for MLX's CPU build.

MLX's CPU kernel for a quantized product costs about one single-row product per row:
a 64-token prefill or teacher-forced pass of SmolLM2 re-quantized to 3 or 4 bits
takes ~7.7 s here, against 0.3 s for the same model in float32 on OpenBLAS. A layer
swapped by `blas_products` dequantizes its weights (in float32, as the kernel
computes) and multiplies on BLAS when the input has enough rows to pay for that
(`min_rows`: dequantizing the whole of SmolLM2 costs about 3 rows of the kernel at 4
bits and about 8 at 3 bits); fewer rows (a decode step, a short draft) still use the
kernel. The weights stay quantized (the same memory); the products are the same up to
float rounding (tests/engine/test_quantized_blas.py). Measured on this 2-core machine: a 64-token
pass 7.7 s -> 1.3 s at 3 bits, 7.6 s -> 0.7 s for the stored 4-bit weights.

The lab's re-quantized variants (quantization, distillation's student, speculative
decoding's draft) are swapped: what they measure from whole sequences takes seconds,
not minutes. The loaded models' paths (compute_path.py) are unchanged.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn

POWER_OF_TWO_ROWS = 4  # 2, 4 and 8 bits: dequantizing costs ~3 rows of the kernel
OTHER_ROWS = 10  # 3, 5 and 6 bits unpack across bytes: ~8 rows


def min_rows(bits: int) -> int:
    """The fewest input rows for which dequantizing and BLAS beat the kernel."""
    return POWER_OF_TWO_ROWS if bits in (2, 4, 8) else OTHER_ROWS


def _float32_weight(layer) -> mx.array:
    biases = layer.get("biases")
    return mx.dequantize(
        layer["weight"],
        layer["scales"].astype(mx.float32),
        None if biases is None else biases.astype(mx.float32),
        group_size=layer.group_size,
        bits=layer.bits,
        mode=layer.mode,
    )


def _on_blas(layer, x: mx.array) -> bool:
    # affine only: other modes' scales are not numbers to upcast (mxfp4's are exponents)
    if getattr(layer, "mode", "affine") != "affine" or x.dtype != mx.float32:
        return False
    return x.size >= min_rows(layer.bits) * x.shape[-1]


class BlasQuantizedLinear(nn.QuantizedLinear):
    """nn.QuantizedLinear whose many-row products dequantize and run on BLAS."""

    def __call__(self, x: mx.array) -> mx.array:
        if not _on_blas(self, x):
            return super().__call__(x)
        y = x @ _float32_weight(self).T
        return y + self["bias"] if "bias" in self else y


class BlasQuantizedEmbedding(nn.QuantizedEmbedding):
    """nn.QuantizedEmbedding whose output projection (tied weights) does the same."""

    def as_linear(self, x: mx.array) -> mx.array:
        if not _on_blas(self, x):
            return super().as_linear(x)
        return x @ _float32_weight(self).T


_SWAPS = {nn.QuantizedLinear: BlasQuantizedLinear, nn.QuantizedEmbedding: BlasQuantizedEmbedding}


def blas_products(model: nn.Module) -> int:
    """Swap `model`'s quantized layers for their BLAS-product kind, in place, where
    MLX computes on the CPU; the number swapped (0 on a GPU)."""
    if mx.default_device().type != mx.DeviceType.cpu:
        return 0
    swapped = 0
    for _name, module in model.named_modules():
        kind = _SWAPS.get(type(module))
        if kind is not None:
            module.__class__ = kind
            swapped += 1
    return swapped
