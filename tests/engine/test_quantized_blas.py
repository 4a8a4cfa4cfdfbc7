"""Quantized layers whose many-row products run on BLAS (quantized_blas.py): the same
products as MLX's quantized kernel up to float rounding, checked against a float64
NumPy product of the weights dequantized by hand from their packed bits; a single
row still goes through the kernel, bit for bit."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from engine.backends.mlx.quantized_blas import (
    BlasQuantizedEmbedding,
    BlasQuantizedLinear,
    blas_products,
    min_rows,
)

GROUP = 64


def _unpacked(layer) -> np.ndarray:
    """The layer's weights in float64, from its packed uint32 words, scales and biases
    (affine quantization: w = scale * q + bias per group of GROUP), by hand in NumPy."""
    words = np.array(layer["weight"]).astype(np.uint64)
    bits, rows = layer.bits, words.shape[0]
    stream = np.zeros((rows, words.shape[1] * 32), dtype=np.uint8)  # little-endian bits
    for b in range(32):
        stream[:, b::32] = (words >> np.uint64(b)) & np.uint64(1)
    cols = stream.shape[1] // bits
    weights = (2 ** np.arange(bits)).astype(np.int64)
    q = stream[:, : cols * bits].reshape(rows, cols, bits).astype(np.int64) @ weights
    scales = np.array(layer["scales"].astype(mx.float32), dtype=np.float64)
    biases = np.array(layer["biases"].astype(mx.float32), dtype=np.float64)
    return q * np.repeat(scales, GROUP, axis=1) + np.repeat(biases, GROUP, axis=1)


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8])
def test_many_rows_equal_a_float64_product_of_the_unpacked_weights(bits):
    mx.random.seed(bits)
    layer = nn.Linear(256, 96, bias=True)
    layer = nn.QuantizedLinear.from_linear(layer, group_size=GROUP, bits=bits)
    kernel = nn.QuantizedLinear.from_linear(nn.Linear(256, 96), group_size=GROUP, bits=bits)
    kernel.update(layer.parameters())  # the same weights, the kernel's products
    model = nn.Sequential(layer)
    assert blas_products(model) == 1 and type(layer) is BlasQuantizedLinear
    w = _unpacked(layer)
    bias = np.array(layer["bias"], dtype=np.float64)
    for rows in (1, min_rows(bits) - 1, min_rows(bits), 17):
        if rows < 1:
            continue
        x = mx.random.normal((1, rows, 256))
        got = np.array(layer(x), dtype=np.float64)[0]
        want = np.array(x, dtype=np.float64)[0] @ w.T + bias
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
        if rows < min_rows(bits):  # the kernel's own products, bit for bit
            assert np.array_equal(got, np.array(kernel(x), dtype=np.float64)[0])


def test_tied_output_projection_and_a_float16_input():
    mx.random.seed(1)
    emb = nn.QuantizedEmbedding.from_embedding(nn.Embedding(300, 128), group_size=GROUP, bits=4)
    kernel = nn.QuantizedEmbedding.from_embedding(nn.Embedding(300, 128), group_size=GROUP, bits=4)
    kernel.update(emb.parameters())
    assert blas_products(nn.Sequential(emb)) == 1 and type(emb) is BlasQuantizedEmbedding
    x = mx.random.normal((1, 9, 128))
    want = np.array(x, dtype=np.float64)[0] @ _unpacked(emb).T
    got = np.array(emb.as_linear(x), dtype=np.float64)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
    # float16 activations keep the kernel (its own rounding), whatever the rows
    half = x.astype(mx.float16)
    assert mx.array_equal(emb.as_linear(half), kernel.as_linear(half))
    # and lookups are untouched
    ids = mx.array([[0, 5, 299]])
    assert mx.array_equal(emb(ids), kernel(ids))


def test_a_re_quantized_model_scores_a_sequence_as_the_kernel_does(tiny_model_dir):
    """A whole model (the tiny random-weight llama) re-quantized to 3 bits: its logits
    over a sequence with BLAS products equal the kernel's to float32 rounding."""
    from engine.backends.mlx.loader import load_model

    model = load_model(tiny_model_dir, prefer="speed")[0].model
    nn.quantize(model, group_size=32, bits=3)  # its width is 32
    ids = mx.array([[3, 17, 99, 120, 7, 64, 200, 11, 5, 42, 8, 77]])
    assert ids.size >= min_rows(3)  # the BLAS products, not the kernel's
    before = np.array(model(ids), dtype=np.float64)
    assert blas_products(model) > 0
    after = np.array(model(ids), dtype=np.float64)
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4 * np.abs(before).max())


def test_other_modes_keep_the_kernel():
    """mxfp4's scales are shared exponents, not numbers to upcast: the kernel computes."""
    mx.random.seed(2)
    layer = nn.QuantizedLinear.from_linear(nn.Linear(256, 64), mode="mxfp4")
    kernel = nn.QuantizedLinear.from_linear(nn.Linear(256, 64), mode="mxfp4")
    kernel.update(layer.parameters())
    assert blas_products(nn.Sequential(layer)) == 1
    x = mx.random.normal((1, 16, 256))
    assert mx.array_equal(layer(x), kernel(x))
