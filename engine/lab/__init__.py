"""The inference techniques lab: each experiment's parameters and result as frozen
dataclasses of plain values (params.py, results.py). One function runs them
(engine/backends/mlx/lab_runs.run_experiment), in the engine process for the Lab
window and the command line alike; no MLX here."""

from engine.lab.params import (
    COMMAND_CACHE,
    COMMAND_SPECULATIVE,
    KINDS,
    WINDOW_KV_BITS,
    WINDOW_QUANT_BITS,
    BatchParams,
    CacheParams,
    LabParams,
    QuantParams,
    SpeculativeParams,
    params_from,
)
from engine.lab.results import (
    BatchResult,
    BatchRow,
    CacheResult,
    CacheTurn,
    CeilingPoint,
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
