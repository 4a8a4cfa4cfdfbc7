"""How fast a quantized model runs as stored against dequantized to float32, measured so
that a busy moment cannot decide for good (compute_path.py makes the choice from it).

The two copies are timed in ROUNDS alternating rounds (stored, float32, stored, ...), so
a burst of load falls on both alike, and each side keeps its median. While it runs, the
CPU time the *other* processes used is read from /proc/stat (Linux; None elsewhere):
a measurement taken while they held more than BUSY_SHARE of the cores is marked busy,
and compute_path measures again at the next load, keeping the quietest measurement.
What was measured, when, and under which load is kept beside the choice
(runtime/paths.json) and said in the choice's reason.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

CACHE = "paths.json"  # in runtime/: measurements and choices per model file and machine
ROUNDS = 3  # alternating rounds per side; the median of each side is kept
BUSY_SHARE = 0.25  # of the cores, used by other processes: a busy measurement
MAX_ATTEMPTS = 3  # measurements taken while busy are retried at most this often
N_PROMPT, N_DECODE = 16, 2  # per round: one prefill chunk, two steps (the stored path
# prefills SmolLM2 at ~8 tokens/s here: 3 rounds cost ~7 s, once per model and machine)


@dataclass(frozen=True)
class PathMeasurement:
    """Seconds per prompt token and per decode step on each path, and the load then."""

    stored_prefill_s: float
    stored_decode_s: float
    float32_prefill_s: float
    float32_decode_s: float
    rounds: int
    cores: int  # this machine's CPU cores
    others_cores: float | None  # cores other processes kept busy meanwhile (None: unknown)
    when: str  # local time of the measurement, "2026-12-06 03:40"

    @property
    def prefill_gain(self) -> float:
        """How many times faster float32 prefills than the stored weights."""
        return self.stored_prefill_s / max(self.float32_prefill_s, 1e-12)

    @property
    def decode_gain(self) -> float:
        """How many times faster float32 decodes than the stored weights."""
        return self.stored_decode_s / max(self.float32_decode_s, 1e-12)

    @property
    def busy(self) -> bool:
        """Whether other processes held more than BUSY_SHARE of the cores meanwhile."""
        return self.others_cores is not None and self.others_cores > BUSY_SHARE * self.cores

    def load_words(self) -> str:
        """The load during the measurement, for people."""
        if self.others_cores is None:
            return "load not known"
        state = "busy" if self.busy else "idle"
        return f"{state}: other processes used {self.others_cores:.1f} of {self.cores} cores"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: object) -> PathMeasurement | None:
        """The measurement a cache entry holds; None for anything malformed."""
        if not isinstance(d, dict):
            return None
        try:
            times = [float(d[k]) for k in ("stored_prefill_s", "stored_decode_s")]
            times += [float(d[k]) for k in ("float32_prefill_s", "float32_decode_s")]
            others = d.get("others_cores")
            others = None if others is None else float(others)
            m = cls(*times, int(d["rounds"]), int(d["cores"]), others, str(d["when"]))
        except (KeyError, TypeError, ValueError):
            return None
        return m if all(t > 0 and t < 1e6 for t in times) and m.cores > 0 else None


def _cpu_ticks() -> tuple[int, int] | None:
    """(busy ticks of the whole machine, ticks of this process), or None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        with open("/proc/self/stat", encoding="ascii") as f:
            own = f.read().rsplit(")", 1)[1].split()  # after the command's name
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal
    return busy, int(own[11]) + int(own[12])  # utime + stime (fields 14 and 15)


class LoadMeter:
    """Cores other processes keep busy between `start()` and `others()`."""

    def start(self) -> LoadMeter:
        self._t, self._ticks = time.perf_counter(), _cpu_ticks()
        return self

    def others(self) -> float | None:
        """Cores the other processes used on average since `start()`; None if unknown."""
        ticks, wall = _cpu_ticks(), time.perf_counter() - self._t
        if ticks is None or self._ticks is None or wall <= 0:
            return None
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        busy = (ticks[0] - self._ticks[0]) - (ticks[1] - self._ticks[1])
        return max(0.0, busy / hz / wall)


def time_forward(model, n_prompt: int = N_PROMPT, n_decode: int = N_DECODE):
    """(seconds per prompt token in one chunk, seconds per decode step) of `model`."""
    import mlx.core as mx
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


def measure_paths(stored, float32, rounds: int = ROUNDS, timer: Callable = time_forward):
    """Time both copies in alternating rounds; their medians and the load meanwhile.

    Args:
        stored: the model as stored (packed weights, float32 scales).
        float32: the same model dequantized to float32.
        rounds: rounds per side.
        timer: `timer(model) -> (prefill s/token, decode s/step)`.

    Returns:
        A PathMeasurement.
    """
    meter = LoadMeter().start()
    q, f = [], []
    for _ in range(rounds):
        q.append(timer(stored))
        f.append(timer(float32))
    med = [statistics.median(x[i] for x in side) for side in (q, f) for i in (0, 1)]
    cores = os.cpu_count() or 1
    return PathMeasurement(
        *med, rounds, cores, meter.others(), time.strftime("%Y-%m-%d %H:%M", time.localtime())
    )


def cached_entry(key: str) -> tuple[list[PathMeasurement], int]:
    """The measurements kept for `key` (malformed or old-style ones dropped) and how
    many times it was measured."""
    from engine.store.runtime_cache import read_json

    return _parse_entry(read_json(CACHE).get(key))


def _parse_entry(seen) -> tuple[list[PathMeasurement], int]:
    if not isinstance(seen, dict) or not isinstance(seen.get("measurements"), list):
        return [], 0
    kept = [m for d in seen["measurements"] for m in [PathMeasurement.from_dict(d)] if m]
    attempts = seen.get("attempts")
    return kept, attempts if isinstance(attempts, int) and attempts >= len(kept) else len(kept)


def quietest(kept: list[PathMeasurement]) -> PathMeasurement | None:
    """The measurement taken under the least load from others (unknown load counts as
    idle: nothing said it was busy)."""
    return min(kept, key=lambda m: m.others_cores or 0.0, default=None)


def settled(kept: list[PathMeasurement], attempts: int) -> bool:
    """Whether the next load uses these measurements as they are (else it measures
    again: none yet, or the quietest was busy with attempts left)."""
    best = quietest(kept)
    return best is not None and not (best.busy and attempts < MAX_ATTEMPTS)


def cached_choice(folder: str, size_bytes: int) -> tuple[str, str] | None:
    """(path, reason) that the automatic choice made for a model file on this machine
    (any BLAS) and that the next load will use as it is; None if the next load
    measures (never measured here, last measured while busy, or a cache that could not
    be read), so what `logitscope models` says is what the next load does."""
    from engine.store.runtime_cache import read_json

    prefix = f"{folder}|{size_bytes}|"
    for key, entry in read_json(CACHE).items():
        if key.startswith(prefix) and isinstance(entry, dict) and "reason" in entry:
            if not settled(*_parse_entry(entry)):
                return None
            return str(entry.get("path", "")), str(entry["reason"])
    return None
