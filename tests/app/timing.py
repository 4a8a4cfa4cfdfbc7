"""What the GUI thread does per frame while a run streams: structure, not time.

The window stays smooth by construction: the engine's records reach the GUI thread
in batches of at most MAX_PER_FRAME per ~30 Hz frame (app/core/bridge.py), the answer
appends each batch at once, and the charts redraw one chart per redraw tick, never all
five, except when a run starts, ends or a step is selected. These are counted here and
asserted in the tests; how many milliseconds a frame takes on this machine is measured
by scripts/bench_window.py and BENCHMARKS.md, never asserted (these machines are shared).
"""

from __future__ import annotations

from app.core.bridge import MAX_PER_FRAME


class FrameWork:
    """Counts, while in use, the charts drawn per redraw tick, the full redraws, and
    the sizes of the token batches the bridge hands the window."""

    def __init__(self, window):
        self.window = window
        self.draws_per_tick: list[int] = []
        self.full_redraws = 0
        self.batches: list[int] = []
        self._draws = 0
        self._in_full = False

    def __enter__(self):
        rv = self.window.run_view
        self._draw, self._redraw = rv._draw_chart, rv.redraw

        def draw(name):
            if not self._in_full:
                self._draws += 1
            self._draw(name)

        def redraw():
            self.full_redraws += 1
            self._in_full = True
            try:
                self._redraw()
            finally:
                self._in_full = False

        rv._draw_chart, rv.redraw = draw, redraw
        rv.redraw_timer.timeout.connect(self._tick)
        self.window.bridge.tokens.connect(self._batch)
        return self

    def __exit__(self, *exc):
        rv = self.window.run_view
        rv._draw_chart, rv.redraw = self._draw, self._redraw
        rv.redraw_timer.timeout.disconnect(self._tick)
        self.window.bridge.tokens.disconnect(self._batch)

    def _tick(self) -> None:
        self.draws_per_tick.append(self._draws)
        self._draws = 0

    def _batch(self, records) -> None:
        self.batches.append(len(records))

    def check(self, tokens: int, max_full_redraws: int = 4) -> None:
        """One chart per tick at most; full redraws only at a run's start and end (not
        per token); every token arrived, in frames of at most MAX_PER_FRAME."""
        assert self.draws_per_tick, "the redraw timer never ticked"
        assert max(self.draws_per_tick) <= 1, f"a tick drew {max(self.draws_per_tick)} charts"
        assert self.full_redraws <= max_full_redraws, f"{self.full_redraws} full redraws"
        assert sum(self.batches) >= tokens and max(self.batches) <= MAX_PER_FRAME
