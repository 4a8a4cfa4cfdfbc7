"""The inference techniques lab: each experiment's parameters and result as frozen
dataclasses of plain values (params.py, results.py; confidence.py and routing.py for
calibrate and route). registry.py lists every experiment once: its name, parameters,
runner and command; one function runs them (engine/backends/mlx/lab_runs.run_experiment,
through the registry), in the engine process for the Lab window and in this process
for the command line; no MLX here."""

from engine.lab.params import (
    COMMAND_CACHE,
    COMMAND_SPECULATIVE,
    WINDOW_KV_BITS,
    WINDOW_QUANT_BITS,
    BatchParams,
    CacheParams,
    CalibrateParams,
    DistillParams,
    DistillTrainParams,
    LabParams,
    QuantParams,
    SpeculativeParams,
)
from engine.lab.results import (
    BatchResult,
    BatchRow,
    CacheResult,
    CacheTurn,
    CeilingPoint,
    DistillResult,
    DistillTrainResult,
    KVPrecision,
    LabResult,
    QuantResult,
    QuantVariant,
    SpeculativeResult,
    SpeculativeRound,
    SpeculativeRun,
    result_from,
)

__all__ = [
    "COMMAND_CACHE",
    "COMMAND_SPECULATIVE",
    "EXPERIMENTS",
    "KINDS",
    "WINDOW_KV_BITS",
    "WINDOW_QUANT_BITS",
    "BatchParams",
    "BatchResult",
    "BatchRow",
    "CacheTurn",
    "CeilingPoint",
    "KVPrecision",
    "QuantVariant",
    "SpeculativeRound",
    "SpeculativeRun",
    "CacheParams",
    "CalibrateParams",
    "DistillParams",
    "DistillResult",
    "DistillTrainParams",
    "DistillTrainResult",
    "CacheResult",
    "LabParams",
    "LabResult",
    "QuantParams",
    "QuantResult",
    "SpeculativeParams",
    "SpeculativeResult",
    "params_from",
    "result_from",
]

_REGISTRY = ("EXPERIMENTS", "KINDS", "params_from")


def __getattr__(name: str):
    """The registry's names, imported on first use: engine/lab/registry.py imports
    routing.py (and with it numpy), which importing engine.lab alone does not need."""
    if name in _REGISTRY:
        from engine.lab import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'engine.lab' has no attribute {name!r}")
