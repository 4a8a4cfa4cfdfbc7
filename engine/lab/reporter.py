"""What a long lab experiment reports while it runs, and how it learns it should stop.

An experiment receives a `LabReporter`: called as `reporter(message, fraction)` it
reports progress (as every experiment's `progress` callback does); `partial(step)`
sends one `LabStep` (a record of plain values the window draws at once and the
command line prints as a JSON line); `should_stop()` says whether the person asked
to cancel. The engine process sends the steps over its pipe as they come
(engine/process/worker.py); the command line prints them. No MLX here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class LabStep:
    """One step of a long experiment, sent while it runs (before its LabRecord).

    Attributes:
        kind: the experiment's kind (e.g. "distill-train").
        step: the step just done (1-based; 0 before the first).
        data: plain values (numbers, None) of that step.
    """

    kind: str
    step: int
    data: dict
    type: str = "lab_step"

    def to_dict(self) -> dict:
        """The step as a plain JSON-ready dict."""
        return asdict(self)


class LabReporter:
    """Progress, partial steps and the cancel flag for one experiment (see the module)."""

    def __init__(
        self,
        progress: Callable[[str, float], None] | None = None,
        partial: Callable[[LabStep], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ):
        self._progress, self._partial, self._stop = progress, partial, should_stop

    def __call__(self, message: str, fraction: float) -> None:
        if self._progress is not None:
            self._progress(message, fraction)

    def partial(self, step: LabStep) -> None:
        """Send one step's record (nothing without a receiver)."""
        if self._partial is not None:
            self._partial(step)

    def should_stop(self) -> bool:
        """True once the person asked to cancel."""
        return bool(self._stop is not None and self._stop())


def reporter_of(progress) -> LabReporter:
    """`progress` as a LabReporter (a plain (message, fraction) callback, or None,
    reports progress only and is never asked to stop)."""
    return progress if isinstance(progress, LabReporter) else LabReporter(progress)
