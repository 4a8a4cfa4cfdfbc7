"""Time bounds for GUI tests as ratios against a baseline measured in the same test.

These machines are shared: an absolute bound (100 ms) turns red on a loaded
machine. The baseline is the longest heartbeat gap while the window repaints all
five charts at once, the heaviest single thing it does; a streaming window must
never stall longer than that plus a margin (it draws one chart per tick).
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer

HEARTBEAT_MS = 16
STALL_FLOOR_S = 0.100  # below this, any gap is fine on any machine
STALL_RATIO = 2.0  # a frame paints one chart and some text: never two full redraws' worth


class Heartbeat:
    """A 16 ms GUI timer recording the gaps between its ticks."""

    def __init__(self):
        self.gaps: list[float] = []
        self._last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(self._beat)

    def _beat(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self._last)
        self._last = now

    def __enter__(self):
        self._last = time.perf_counter()
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.stop()


def full_redraw_baseline(qtbot, window, frames: int = 8) -> float:
    """Longest heartbeat gap while every chart is redrawn at once, `frames` times."""
    with Heartbeat() as hb:
        for _ in range(frames):
            window.run_view.dirty = []
            window.run_view.redraw()
            qtbot.wait(50)
    return max(hb.gaps)


def stall_bound(baseline: float) -> float:
    return max(STALL_FLOOR_S, STALL_RATIO * baseline)


def check_smooth(gaps: list[float], baseline: float) -> None:
    """The window stays smooth: its 95th-percentile gap within the bound (a stall that
    recurs), and no single gap beyond four times it (one long freeze). A lone hiccup
    from another process on a shared machine is neither."""
    bound = stall_bound(baseline)
    ordered = sorted(gaps)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    assert p95 < bound, f"GUI stalls recur: p95 gap {p95 * 1e3:.0f} ms (bound {bound * 1e3:.0f})"
    assert ordered[-1] < 4 * bound, f"GUI froze {ordered[-1] * 1e3:.0f} ms"
