"""The compute limit prefill is set against: MLX's own float32 matrix product (on the
BLAS the engine runs, OpenBLAS or MLX's reference one) at the model's MLP shape, a
prompt chunk of CHUNK tokens times hidden -> intermediate. NumPy's BLAS on a 512 x 512
product is another library at another shape: it read 13 GFLOP/s on a machine whose
prefill achieved 15.

It is an estimate, not a proof of a ceiling: the model's own kernels (quantized
matmuls, attention) may run faster or slower than this product, and a shared machine
is measured at one moment. Callers that show an achieved figure above it say so.
"""

from __future__ import annotations

import os
import time

import mlx.core as mx

from engine.store.runtime_cache import read_json, write_json

CHUNK = 256  # prompt tokens per product: a prefill chunk's worth
REPS = 5  # best of, after one untimed warm-up
CACHE = "gemm_limits.json"
FALLBACK_SHAPE = (512, 512)  # (hidden, intermediate) when the model does not say


def model_shape(model) -> tuple[int, int]:
    """(hidden, intermediate) of the model's MLP, from its arguments."""
    args = getattr(model, "args", None)
    hidden = getattr(args, "hidden_size", None)
    inter = getattr(args, "intermediate_size", None)
    if isinstance(hidden, int) and isinstance(inter, int) and hidden > 0 and inter > 0:
        return hidden, inter
    return FALLBACK_SHAPE


def measure_gflops(m: int, k: int, n: int, reps: int = REPS) -> float:
    """Best float32 GFLOP/s of an (m, k) @ (k, n) product on MLX's default device."""
    a = mx.random.normal((m, k), key=mx.random.key(0))  # (M, K)
    b = mx.random.normal((k, n), key=mx.random.key(1))  # (K, N)
    mx.eval(a, b, a @ b)  # warm-up: allocation and kernel choice, not timed
    best = 0.0
    for _ in range(reps):
        t = time.perf_counter()
        mx.eval(a @ b)
        best = max(best, 2 * m * k * n / (time.perf_counter() - t))
    return best / 1e9


def describe(k: int, n: int, blas: str) -> str:
    """In words: the float32 (CHUNK x k x n) product measured on `blas`."""
    return (
        f"MLX float32 {CHUNK} x {k} x {n} product (the model's MLP shape) on {blas}; "
        "an estimate, not a ceiling"
    )


def gemm_limit(model) -> tuple[float, str]:
    """(GFLOP/s, where it comes from), measured once per shape, BLAS and machine."""
    from engine.backends.mlx.fast_blas import status

    k, n = model_shape(model)
    blas = status().detail if status().ok else "MLX's own BLAS"
    key = f"{os.uname().nodename}|{os.cpu_count()}|{blas}|{CHUNK}x{k}x{n}"
    seen = read_json(CACHE)
    value = seen.get(key)
    if not isinstance(value, int | float) or value <= 0:
        value = measure_gflops(CHUNK, k, n)
        write_json(CACHE, {**seen, key: value})
    return float(value), describe(k, n, blas)
