"""The energy of one run: measured where the machine has a counter, otherwise
estimated from the run's time and a typical power, and always labelled which.

- Linux: powercap/RAPL (`/sys/class/powercap/*/energy_uj`), read before and after the
  run, with the counter's wrap-around at `max_energy_range_uj`. It measures the whole
  processor package (everything running on it, not only this run).
- macOS: `powermetrics` only when the person opts in (LOGITSCOPE_POWERMETRICS, see the
  README); it needs root, and Logitscope never asks for it.
- Anywhere else: the run's seconds x watts (the person's own, or engine/machine/power_table.py),
  labelled `estimated from N W`.

No MLX and no Qt; a remote run's energy is not this machine's and is never estimated.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engine.store import environment

POWERCAP = Path("/sys/class/powercap")
MEASURED_RAPL = "measured (RAPL)"
MEASURED_POWERMETRICS = "measured (powermetrics)"
POWERMETRICS_MS = 100  # sampling interval
_ZONE = re.compile(r"^[a-z-]*rapl:\d+$")  # a package zone; its sub-zones are inside it


@dataclass(frozen=True)
class Zone:
    """One RAPL package counter: its file and the value at which it wraps to 0."""

    energy_file: Path
    max_uj: int


def rapl_zones(root: Path | None = None) -> list[Zone]:
    """The readable package counters (sub-zones left out: they are parts of them).

    Args:
        root: the powercap folder (tests pass a fake one); None: LOGITSCOPE_POWERCAP_DIR
            or /sys/class/powercap.

    Returns:
        One Zone per package whose `energy_uj` can be read; [] where none can.
    """
    root = root or Path(environment.text("LOGITSCOPE_POWERCAP_DIR") or POWERCAP)
    zones = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for d in entries:
        if not _ZONE.match(d.name):
            continue
        try:
            int((d / "energy_uj").read_text())
            top = int((d / "max_energy_range_uj").read_text())
        except (OSError, ValueError):
            continue  # unreadable (root only since 2020's CVE-2020-8694): estimate
        zones.append(Zone(d / "energy_uj", top))
    return zones


def counter_delta(before: int, after: int, max_uj: int) -> int:
    """Microjoules between two readings of a counter that wraps to 0 past `max_uj`.

    Args:
        before: the first reading.
        after: the second.
        max_uj: the counter's range (`max_energy_range_uj`).

    Returns:
        after - before, or, when the counter wrapped once, the distance through max_uj.
    """
    return after - before if after >= before else after + (max_uj - before)


class RaplMeter:
    """Reads every package counter at start and at stop."""

    def __init__(self, zones: list[Zone]):
        self.zones = zones
        self.start_uj: list[int] = []

    def start(self) -> None:
        """Take the first readings."""
        self.start_uj = [int(z.energy_file.read_text()) for z in self.zones]

    def stop(self, _seconds: float) -> tuple[float | None, str]:
        """Joules since start (None if a counter became unreadable), and the label."""
        try:
            total = sum(
                counter_delta(b, int(z.energy_file.read_text()), z.max_uj)
                for z, b in zip(self.zones, self.start_uj, strict=True)
            )
        except (OSError, ValueError):
            return None, MEASURED_RAPL
        return total / 1e6, MEASURED_RAPL


_POWER_LINE = re.compile(r"Combined Power \(CPU \+ GPU \+ ANE\):\s*([\d.]+)\s*mW")


def powermetrics_joules(text: str, interval_s: float) -> float | None:
    """Energy from powermetrics' text: each sample's combined power x its interval.

    Args:
        text: powermetrics' output (one "Combined Power (CPU + GPU + ANE): N mW" per sample).
        interval_s: the sampling interval.

    Returns:
        Joules, or None when no sample was found.
    """
    samples = [float(m) for m in _POWER_LINE.findall(text)]
    return sum(samples) / 1000 * interval_s if samples else None


class PowermetricsMeter:
    """Runs the person's powermetrics command for the run and integrates its samples."""

    def __init__(self, command: list[str]):
        self.command = command
        self.proc: subprocess.Popen | None = None
        self.out: list[str] = []

    def start(self) -> None:
        """Start sampling (output read on a thread so the pipe never fills)."""
        args = [*self.command, "--samplers", "cpu_power,gpu_power", "-i", str(POWERMETRICS_MS)]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        threading.Thread(target=lambda: self.out.extend(self.proc.stdout), daemon=True).start()

    def stop(self, _seconds: float) -> tuple[float | None, str]:
        """Stop sampling; joules over the samples taken (None: none came)."""
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            time.sleep(0.05)  # the reader thread takes the last lines
        return powermetrics_joules("".join(self.out), POWERMETRICS_MS / 1000), (
            MEASURED_POWERMETRICS
        )


def estimated_label(watts: float) -> str:
    """The label of an estimate: `estimated from 15 W`."""
    return f"estimated from {watts:g} W"


class EstimateMeter:
    """No counter: the run's seconds x a typical (or the person's) power."""

    def __init__(self, watts: float):
        self.watts = watts

    def start(self) -> None:
        """Nothing to read."""

    def stop(self, seconds: float) -> tuple[float | None, str]:
        """seconds x watts, and the label saying so."""
        return seconds * self.watts, estimated_label(self.watts)


def meter_for(device: str, user_watts: float | None = None, gpu: str = ""):
    """The best meter on this machine for a local run on `device`.

    Args:
        device: where MLX runs ('CPU', 'Metal GPU', 'CUDA GPU').
        user_watts: the person's own figure (engine/cost/costs.py); it replaces the table.
        gpu: the CUDA GPU's name, for the table.

    Returns:
        A meter with start() and stop(seconds) -> (joules | None, label).
    """
    from engine.machine.power_table import cpu_name, typical_watts

    zones = rapl_zones()
    if zones and device == "CPU":  # RAPL counts the CPU package, not a GPU
        return RaplMeter(zones)
    opt_in = environment.text("LOGITSCOPE_POWERMETRICS").strip()
    if opt_in and environment.flag("LOGITSCOPE_POWERMETRICS"):
        command = ["powermetrics"] if opt_in.lower() in ("1", "yes", "true") else opt_in
        return PowermetricsMeter(command if isinstance(command, list) else shlex.split(command))
    if user_watts:
        return EstimateMeter(user_watts)
    return EstimateMeter(typical_watts(device, cpu_name(), gpu)[0])
