"""What this machine's CPU can do at best, measured once (NumPy, no MLX): memory
bandwidth (a large copy) and float32 matrix-product speed on NumPy's BLAS. Decode
reads every weight once per token (bandwidth-bound) and is shown against the copy;
prefill does 2 x parameters FLOPs per token and, on the CPU, is shown against MLX's
own product at the model's shape instead (engine/backends/mlx/gemm_limit.py):
NumPy's 512 x 512 product is another BLAS, and prefills exceeded it."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

from engine.store.runtime_cache import read_json, write_json


@dataclass(frozen=True)
class Limits:
    """A machine's measured limits: memory bandwidth (GB/s) and float32 GEMM (GFLOP/s)."""

    memory_gbs: float  # GB/s read+written by a large copy (decimal GB)
    matmul_gflops: float  # float32 GEMM, the BLAS NumPy uses

    def describe(self) -> str:
        """The limits in words, e.g. "100 GB/s memory, 900 GFLOP/s float32"."""
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


# On the CPU the compute limit is MLX's own product at the model's shape (gemm_limit.py):
# NumPy's 512 x 512 product runs on another BLAS and was exceeded by real prefills.
CPU_SOURCE = "memory: measured on this CPU (NumPy: a 64 MB copy)"
# Published peak figures: memory bandwidth GB/s, float32 GFLOP/s (GPU shader peak).
APPLE_CHIPS = {
    "M1": (68, 2600),
    "M1 Pro": (200, 5300),
    "M1 Max": (400, 10600),
    "M1 Ultra": (800, 21000),
    "M2": (100, 3600),
    "M2 Pro": (200, 6800),
    "M2 Max": (400, 13600),
    "M2 Ultra": (800, 27200),
    "M3": (100, 4100),
    "M3 Pro": (150, 7400),
    "M3 Max": (400, 16400),
    "M3 Ultra": (819, 28000),
    "M4": (120, 4300),
    "M4 Pro": (273, 9200),
    "M4 Max": (546, 18400),
}
NVIDIA_GPUS = {
    "H200": (4800, 67000),
    "H100 SXM": (3350, 67000),
    "H100 PCIe": (2000, 51000),
    "H100": (3350, 67000),
    "A100": (2039, 19500),
    "L40S": (864, 91600),
    "L4": (300, 30300),
    "A10": (600, 31200),
    "RTX 4090": (1008, 82600),
    "RTX 3090": (936, 35600),
    "T4": (320, 8100),
}


def gpu_limits(device_name: str) -> tuple[Limits, str] | None:
    """A GPU's published limits by its name (the longest matching table entry)."""
    for table, maker in ((APPLE_CHIPS, "Apple"), (NVIDIA_GPUS, "NVIDIA")):
        hits = [k for k in table if k.lower() in device_name.lower()]
        if hits:
            key = max(hits, key=len)
            gbs, gflops = table[key]
            return Limits(gbs, gflops), f"{maker} {key} published figures (Logitscope's table)"
    return None


def total_memory_bytes() -> int | None:
    """This machine's physical memory (unified memory on Apple Silicon), or None."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
