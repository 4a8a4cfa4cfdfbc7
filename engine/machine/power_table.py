"""What a device typically draws while it runs a model: the table behind an energy
*estimate* (engine/machine/energy.py) where no counter can be read.

The figures are rough, rounded and labelled as such everywhere they are used
(`estimated from N W`); a person who knows better sets their own watts
(engine/cost/costs.py). No MLX and no Qt: the window and the engine both read it.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

# Apple chips: approximate package power (CPU + GPU) under a sustained load, rounded.
# Anchors: Apple's "Mac mini power consumption and thermal output" page gives the M1 Mac
# mini 39 W and the M4 Mac mini 65 W at most for the whole machine; the rest is scaled by
# core count from such pages and reviews. A small model draws less: check, or set watts.
APPLE_SOURCE = (
    "Apple chip table: approximate sustained package power (anchored on Apple's Mac mini "
    "power pages: M1 39 W, M4 65 W at most for the whole machine); an example to check"
)
APPLE_WATTS = {
    "M1": 20,
    "M1 Pro": 35,
    "M1 Max": 60,
    "M1 Ultra": 120,
    "M2": 20,
    "M2 Pro": 40,
    "M2 Max": 65,
    "M2 Ultra": 130,
    "M3": 20,
    "M3 Pro": 40,
    "M3 Max": 70,
    "M3 Ultra": 140,
    "M4": 25,
    "M4 Pro": 45,
    "M4 Max": 75,
}
# NVIDIA GPUs: the board power each maker publishes (the most the card draws).
NVIDIA_SOURCE = "NVIDIA board power (published maximum; a small model draws less)"
NVIDIA_WATTS = {
    "H200": 700,
    "H100 SXM": 700,
    "H100 PCIe": 350,
    "H100": 700,
    "A100": 400,
    "L40S": 350,
    "L4": 72,
    "A10": 150,
    "RTX 4090": 450,
    "RTX 3090": 350,
    "T4": 70,
}
# CPU classes, from makers' rated power (TDP).
SERVER_WATTS_PER_CORE = 5.0  # AMD EPYC 7763: 280 W / 64 cores = 4.4; Xeon 8380: 270 W / 40 = 6.8
LAPTOP_WATTS = 15.0  # Intel and AMD "U" laptop processors: 15 W rated power
DESKTOP_WATTS = 65.0  # the common desktop rating (Core i5/i7 non-K, Ryzen 5/7 non-X)
SERVER_NAMES = ("xeon", "epyc", "neoverse", "graviton", "ampere", "threadripper")


def cpu_name() -> str:
    """The processor's marketing name ('Apple M2 Pro', 'AMD EPYC 7763 …'), or ''."""
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def cores_in_use() -> int:
    """Cores this process may run on (a container's share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _is_laptop() -> bool:
    return any(Path("/sys/class/power_supply").glob("BAT*"))


def _longest(table: dict, name: str):
    hits = [k for k in table if k.lower() in name.lower()]
    return max(hits, key=len) if hits else None


def typical_watts(device: str, cpu: str = "", gpu: str = "") -> tuple[float, str]:
    """What the device running the model typically draws, and where that comes from.

    Args:
        device: where MLX runs ('CPU', 'Metal GPU', 'CUDA GPU').
        cpu: the processor's name (cpu_name()).
        gpu: the GPU's name on a CUDA machine ('' where unknown).

    Returns:
        (watts, source in words).
    """
    if "Apple" in cpu:
        chip = _longest(APPLE_WATTS, cpu)  # "Apple M2 Pro": the longest name, "M2 Pro"
        if chip:
            return float(APPLE_WATTS[chip]), f"{APPLE_SOURCE} ({chip} {APPLE_WATTS[chip]} W)"
    if "CUDA" in device:
        card = _longest(NVIDIA_WATTS, gpu)
        if card:
            return float(NVIDIA_WATTS[card]), f"{NVIDIA_SOURCE}: {card} {NVIDIA_WATTS[card]} W"
    if any(n in cpu.lower() for n in SERVER_NAMES):
        n = cores_in_use()
        return SERVER_WATTS_PER_CORE * n, (
            f"server CPU: {SERVER_WATTS_PER_CORE:g} W per core x {n} cores "
            "(EPYC 7763 280 W / 64 cores, Xeon 8380 270 W / 40 cores)"
        )
    if _is_laptop():
        return LAPTOP_WATTS, "laptop CPU: 15 W (rated power of Intel and AMD 'U' processors)"
    return DESKTOP_WATTS, "desktop CPU: 65 W (the common desktop processor rating)"
