"""Progress of long work (fetching, converting, loading a model) on a terminal.

One display for every command: on a terminal, a single bar updated in place
(tqdm) with the current step's message, and with size and rate while bytes
are transferred; when stderr is not a terminal (a log, CI) or the command
prints JSON, plain lines, at most one per tenth of each phase, so a setup log
stays short. The engine reports through plain callbacks, `(message, fraction)`
and, where bytes move, `transfer(message, done, total)`; this module only draws.
"""

from __future__ import annotations

import sys
import time

from engine.display.units import to_mb

PLAIN_STEP = 0.1  # a plain line at most every tenth of a phase


class ProgressDisplay:
    """A `(message, fraction)` callback that draws on stderr; `transfer` adds bytes.

    Args:
        plain: plain lines even on a terminal (e.g. with --json).
        stream: where to draw (stderr).
    """

    def __init__(self, plain: bool = False, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.tty = not plain and isatty()
        self._bar = None
        self._bytes_bar = False
        self._last = -1.0  # fraction of the last plain line
        self._transfer_start: float | None = None

    def __call__(self, message: str, fraction: float) -> None:
        """Show `message` at `fraction` (0..1) of the work."""
        if not self.tty:
            self._plain(f"[{fraction:4.0%}] {message}", fraction)
            return
        if self._bar is None or self._bytes_bar:
            self._open(total=100, unit="%", bytes_bar=False)
        self._bar.set_description_str(message, refresh=False)
        self._bar.n = round(100 * min(max(fraction, 0.0), 1.0))
        self._bar.refresh()

    def transfer(self, message: str, done: int, total: int | None) -> None:
        """Show `done` of `total` bytes moved (a download), with size and rate."""
        if not self.tty:
            if self._transfer_start is None or done == 0:
                self._transfer_start = time.monotonic()
            fraction = done / total if total else 0.0
            rate = to_mb(done / max(time.monotonic() - self._transfer_start, 1e-6))
            size = (
                f"{to_mb(done):.1f} of {to_mb(total):.1f} MB" if total else f"{to_mb(done):.1f} MB"
            )
            self._plain(f"[{fraction:4.0%}] {message} {size}, {rate:.1f} MB/s", fraction)
            return
        if self._bar is None or not self._bytes_bar or self._bar.total != total:
            self._open(total=total, unit="B", bytes_bar=True)
            self._bar.set_description_str(message, refresh=False)
        self._bar.update(done - self._bar.n)

    def _plain(self, line: str, fraction: float) -> None:
        # A new phase starts again from a lower fraction; within one, a line a tenth.
        if fraction < self._last or fraction >= self._last + PLAIN_STEP or fraction >= 1.0:
            if fraction != self._last or fraction < 1.0:
                print(line, file=self.stream, flush=True)
            self._last = fraction

    def _open(self, total, unit: str, bytes_bar: bool) -> None:
        from tqdm import tqdm

        self.close()
        self._bytes_bar = bytes_bar
        self._bar = tqdm(
            total=total,
            unit=unit,
            unit_scale=bytes_bar,
            unit_divisor=1000,  # kB, MB, GB: decimal, as the plain lines (engine/display/units.py)
            file=self.stream,
            leave=False,
            dynamic_ncols=True,
            bar_format=None if bytes_bar else "{desc} {bar} {n_fmt}% [{elapsed}]",
        )

    def close(self) -> None:
        """Remove the bar (the next output starts on a clean line)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
