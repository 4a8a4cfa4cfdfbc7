"""Which way a quantized model runs on the CPU: as stored, or dequantized to
float32 on an optimised BLAS, chosen by measuring both once per model and machine.

The float32 weights are exactly the dequantized quantized ones (only float
rounding differs); they take 32/bits times the memory. On the CPU the stored
path keeps the packed weights but runs float32 scales, biases and activations
(`stored_float32`): as mlx-lm loads them they are float16, which moved Gemma 3's
first log-probability by 0.3 nats and changed its greedy text. Both paths then
give the same log-probabilities (tests/engine/test_compute_paths.py). The choice: `memory` keeps the
quantized weights, `speed` dequantizes if it fits, `auto` (default) dequantizes
when the budget allows and a measurement says it is clearly faster (MARGIN). The
measurement (path_measure.py) alternates the two paths over several rounds and reads the
load meanwhile; one taken while the machine was busy is repeated at the next load (at
most MAX_ATTEMPTS times) and the quietest one decides. Figures, load and choice are kept
in `runtime/paths.json` next to the models and said in the reason (`logitscope models`,
the About box, Inside > Prefill vs decode). `speed` and `memory` pin the path: the test
suite pins it (LOGITSCOPE_COMPUTE), as a user can (`--compute`, the model picker).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx
import mlx.nn as nn

from engine.backends.mlx.path_measure import (
    CACHE,
    MAX_ATTEMPTS,
    PathMeasurement,
    cached_entry,
    measure_paths,
    quietest,
    settled,
)
from engine.store.runtime_cache import read_json, write_json

BUDGET_SHARE = 0.5  # of the memory available now, for the float32 copy (auto)
MARGIN = 1.2  # float32 must prefill this many times faster before auto switches to it
DECODE_FLOOR = 0.9  # ... and decode at least this fast relative to the stored path


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


def dequantize_float32(model: nn.Module, weights: tuple | None = None) -> nn.Module:
    """The model with every quantized layer dequantized, all weights in float32.

    Args:
        model: the model as loaded.
        weights: names its weights on disk (float32_weights.weights_key): a copy
            dequantized before in this process lends its arrays, and this one is kept.
    """
    from mlx_lm.utils import dequantize_model

    from engine.backends.mlx import float32_weights

    model.set_dtype(mx.float32)  # scales and biases first: dequantized in float32, exactly
    model = dequantize_model(model)  # lazy: computed in fill unless a kept copy is shared
    float32_weights.fill(model, weights)
    return model


def _remember(key: str, kept: list[PathMeasurement], attempts: int, path: str, why: str):
    entry = {
        "measurements": [m.to_dict() for m in kept],
        "attempts": attempts,
        "path": path,
        "reason": why,
    }
    write_json(CACHE, {**read_json(CACHE), key: entry})


def float32_wins(m: PathMeasurement) -> bool:
    """Whether float32 is clearly faster: prefill by MARGIN, decode not slower than
    DECODE_FLOOR times the stored path."""
    return m.prefill_gain >= MARGIN and m.decode_gain >= DECODE_FLOOR


def measured_words(m: PathMeasurement, again: bool) -> str:
    """A measurement in words: both gains, how, when and under which load."""
    words = (
        f"measured {m.prefill_gain:.2f}x prefill, {m.decode_gain:.2f}x decode against the "
        f"stored weights (median of {m.rounds} alternating rounds, {m.when}, {m.load_words()})"
    )
    return words + ("; taken while busy: measured again at the next load" if again else "")


def choose_path(
    model: nn.Module,
    key: str,
    prefer: str,
    reload: Callable[[], nn.Module],
    weights: tuple | None = None,
) -> tuple[nn.Module, PathChoice]:
    """Return the model to run (maybe dequantized) and why.

    Args:
        model: the model as mlx-lm loaded it.
        key: names the model file (folder and size) in the measurements' cache.
        prefer: auto | speed | memory.
        reload: a fresh copy of `model` as loaded (auto measures both paths side by side).
        weights: names its weights on disk, to share a float32 copy made before
            (float32_weights).
    """
    from engine.backends.mlx.fast_blas import status

    if mx.default_device().type != mx.DeviceType.cpu:
        return model, PathChoice("as stored", "the GPU runs quantized weights directly")
    need, quantized = float32_bytes(model)
    if not quantized:
        return model, PathChoice(STORED, "not quantized")
    blas = status()
    # speed pinned but float32 not possible: said so, never a quiet change of path
    asked = "speed was asked for, but " if prefer == "speed" else ""
    if not blas.ok:
        why = f"{asked}no optimised BLAS: {blas.detail}"
        return stored_float32(model), PathChoice(STORED_CPU, why)
    if prefer == "memory":
        return stored_float32(model), PathChoice(STORED_CPU, "memory preferred (pinned)")
    avail = available_memory()
    share = 0.9 if prefer == "speed" else BUDGET_SHARE
    if avail is not None and need > share * avail:
        over = (
            f"{asked}float32 needs {need / 1e6:,.0f} MB, over the budget of "
            f"{share * avail / 1e6:,.0f} MB"
        )
        return stored_float32(model), PathChoice(STORED_CPU, over)
    why = f"float32 on {blas.detail}: {need / 1e6:,.0f} MB"
    if prefer == "speed":
        chosen = dequantize_float32(model, weights)
        return chosen, PathChoice("float32", why + " (speed preferred, pinned)")
    key = f"{key}|{blas.detail}|{os.cpu_count()}"
    kept, attempts = cached_entry(key)
    best = quietest(kept)
    if not settled(kept, attempts):
        stored = stored_float32(reload())
        model = dequantize_float32(model, weights)
        kept, attempts = [*kept, measure_paths(stored, model)][-MAX_ATTEMPTS:], attempts + 1
        best = quietest(kept)
        again = not settled(kept, attempts)
        wins = float32_wins(best)
        chosen = (model, stored)[not wins]  # the other copy is dropped here
    else:
        again, wins = False, float32_wins(best)
        chosen = dequantize_float32(model, weights) if wins else stored_float32(model)
    if wins:
        choice = PathChoice("float32", f"{why}; {measured_words(best, again)}")
    else:
        under = f"float32 is not clearly faster here (needs {MARGIN:.1f}x prefill)"
        choice = PathChoice(STORED_CPU, f"{under}: {measured_words(best, again)}")
    _remember(key, kept, attempts, choice.path, choice.reason)
    return chosen, choice
