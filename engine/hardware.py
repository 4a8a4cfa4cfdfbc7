"""What this machine's CPU can do at best, measured once (NumPy, no MLX): memory
bandwidth (a large copy) and float32 matrix-product speed on one thread's worth
of BLAS work. Speeds are shown against these limits: decode reads every weight
once per token (bandwidth-bound), prefill does 2 x parameters FLOPs per token."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

from engine.runtime_cache import read_json, write_json


@dataclass(frozen=True)
class Limits:
    memory_gbs: float  # GB/s read+written by a large copy (decimal GB)
    matmul_gflops: float  # float32 GEMM, the BLAS NumPy uses

    def describe(self) -> str:
        return f"{self.memory_gbs:.0f} GB/s memory, {self.matmul_gflops:.0f} GFLOP/s float32"


def _measure() -> Limits:
    import numpy as np

    a = np.ones(64 * 1024 * 1024 // 8)  # 64 MB: far past the caches
    b = np.empty_like(a)
    best = 0.0
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = max(best, 2 * a.nbytes / (time.perf_counter() - t))  # read + write
    m = np.random.default_rng(0).standard_normal((512, 512), dtype=np.float32)
    m @ m
    flops = 0.0
    for _ in range(5):
        t = time.perf_counter()
        m @ m
        flops = max(flops, 2 * 512**3 / (time.perf_counter() - t))
    return Limits(best / 1e9, flops / 1e9)


def machine_limits() -> Limits:
    """Measured once per machine and cached beside the models (about a second)."""
    key = f"{os.uname().nodename}|{os.cpu_count()}"
    data = read_json("limits.json")
    try:
        if data.get("key") == key:
            return Limits(float(data["memory_gbs"]), float(data["matmul_gflops"]))
    except (KeyError, TypeError, ValueError):
        pass
    limits = _measure()
    write_json("limits.json", {"key": key, **asdict(limits)})
    return limits
