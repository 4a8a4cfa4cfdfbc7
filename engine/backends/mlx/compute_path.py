"""Which way a quantized model runs on the CPU: as stored, or dequantized to
float32 on an optimised BLAS, chosen by measuring both once per model and machine.

The float32 weights are exactly the dequantized quantized ones (only float
rounding differs); they take 32/bits times the memory. On the CPU the stored
path keeps the packed weights but runs float32 scales, biases and activations
(`stored_float32`): as mlx-lm loads them they are float16, which moved Gemma 3's
first log-probability by 0.3 nats and changed its greedy text. Both paths then
give the same log-probabilities (tests/engine/test_compute_paths.py). The choice: `memory` keeps the
quantized weights, `speed` dequantizes if it fits, `auto` (default) dequantizes
when the budget allows and a short measurement says it is faster (cached in
`runtime/paths.json` next to the models).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import mlx.core as mx
import mlx.nn as nn

from engine.runtime_cache import read_json, write_json

CACHE = "paths.json"  # measurements per model and machine
BUDGET_SHARE = 0.5  # of the memory available now, for the float32 copy (auto)


@dataclass(frozen=True)
class PathChoice:
    """How a quantized model runs: `path` float32 | "as stored", and `reason` in words."""

    path: str  # "float32" | "as stored"
    reason: str  # for people: why this path


def available_memory() -> int | None:
    """Bytes of memory available now (Linux /proc/meminfo), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def float32_bytes(model: nn.Module) -> tuple[int, bool]:
    """(bytes the model would take in float32, whether it has quantized layers)."""
    from mlx.utils import tree_flatten

    total, quantized = 0, set()
    for name, m in model.named_modules():
        if isinstance(m, nn.QuantizedLinear | nn.QuantizedEmbedding):
            quantized.add(name)
            rows, packed = m.weight.shape[0], m.weight.shape[-1]
            total += rows * packed * 32 // m.bits * 4
            if "bias" in m:
                total += m.bias.size * 4
    if not quantized:
        return 0, False
    for key, v in tree_flatten(model.parameters()):
        if key.rsplit(".", 1)[0] not in quantized:
            total += v.size * 4
    return total, True


STORED = "as stored"
STORED_CPU = "as stored, float32 scales and activations"  # the packed weights kept


def stored_float32(model: nn.Module) -> nn.Module:
    """The stored path on the CPU: packed weights kept, every floating parameter
    (scales, biases, norms) in float32, so activations are float32 as on the speed path.
    Costs the scales' size again (SmolLM2: 98 -> 115 MB)."""
    model.set_dtype(mx.float32)  # floating parameters only: packed uint32 weights untouched
    mx.eval(model.parameters())
    return model


def dequantize_float32(model: nn.Module) -> nn.Module:
    """The model with every quantized layer dequantized, all weights in float32."""
    from mlx_lm.utils import dequantize_model

    model.set_dtype(mx.float32)  # scales and biases first: dequantized in float32, exactly
    model = dequantize_model(model)
    model.set_dtype(mx.float32)
    mx.eval(model.parameters())
    return model


def _time_forward(model, n_prompt: int = 32, n_decode: int = 3) -> tuple[float, float]:
    """Seconds per prompt token (one chunk) and per decode step."""
    from mlx_lm.models.cache import make_prompt_cache

    ids = mx.array([list(range(1, n_prompt + 1))])
    warm = make_prompt_cache(model)  # first calls allocate and pick kernels: not timed
    mx.eval(model(ids[:, :8], cache=warm))
    mx.eval(model(ids[:, :1], cache=warm))
    cache = make_prompt_cache(model)
    t = time.perf_counter()
    mx.eval(model(ids, cache=cache))
    prefill = (time.perf_counter() - t) / n_prompt
    t = time.perf_counter()
    for _ in range(n_decode):
        mx.eval(model(ids[:, :1], cache=cache))
    return prefill, (time.perf_counter() - t) / n_decode


def _cached(key: str) -> dict | None:
    return read_json(CACHE).get(key)


def _remember(key: str, value: dict) -> None:
    write_json(CACHE, {**read_json(CACHE), key: value})


def choose_path(model: nn.Module, key: str, prefer: str = "auto") -> tuple[nn.Module, PathChoice]:
    """Return the model to run (maybe dequantized) and why."""
    from engine.backends.mlx.fast_blas import status

    if mx.default_device().type != mx.DeviceType.cpu:
        return model, PathChoice("as stored", "the GPU runs quantized weights directly")
    need, quantized = float32_bytes(model)
    if not quantized:
        return model, PathChoice(STORED, "not quantized")
    blas = status()
    if not blas.ok:
        return stored_float32(model), PathChoice(STORED_CPU, f"no optimised BLAS: {blas.detail}")
    if prefer == "memory":
        return stored_float32(model), PathChoice(STORED_CPU, "memory preferred (model picker)")
    avail = available_memory()
    share = 0.9 if prefer == "speed" else BUDGET_SHARE
    if avail is not None and need > share * avail:
        over = (
            f"float32 needs {need / 1e6:,.0f} MB, over the budget of {share * avail / 1e6:,.0f} MB"
        )
        return stored_float32(model), PathChoice(STORED_CPU, over)
    why = f"float32 on {blas.detail}: {need / 1e6:,.0f} MB"
    if prefer == "speed":
        return dequantize_float32(model), PathChoice("float32", why + " (speed preferred)")
    key = f"{key}|{blas.detail}|{os.cpu_count()}"
    seen = _cached(key)
    if seen is None:
        q = _time_forward(stored_float32(model))  # the stored path as it would run
        model = dequantize_float32(model)
        f = _time_forward(model)
        seen = {"quantized_s": q, "float32_s": f}
        _remember(key, seen)
        faster = f[0] < q[0] and f[1] <= q[1] * 1.1
        if not faster:
            return None, PathChoice(STORED_CPU, "measured: float32 is not faster here")
        return model, PathChoice("float32", why + _gain(seen))
    q, f = seen["quantized_s"], seen["float32_s"]
    if f[0] < q[0] and f[1] <= q[1] * 1.1:
        return dequantize_float32(model), PathChoice("float32", why + _gain(seen))
    return stored_float32(model), PathChoice(STORED_CPU, "measured: float32 is not faster here")


def _gain(seen: dict) -> str:
    q, f = seen["quantized_s"], seen["float32_s"]
    return f", measured {q[0] / f[0]:.1f}x prefill, {q[1] / f[1]:.1f}x decode"
