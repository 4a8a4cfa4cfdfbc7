"""Compare's reading lanes: the part of the Comparison (app/session/comparison.py) that
knows a lane may read a text instead of generating, and compares two reads.

A lane whose `reading` is on reads its text (the shared prompt, or its own) through
its model; once the lanes have run, the first two reading lanes that finished are
compared by engine/reading/compare_reads.py (per token with one tokenization, else
per word and per byte), and a row of that comparison can be selected: each lane's
`focus` then points at its own step there. `load_pair` puts one of the shipped
statement pairs (resources/read_pairs.json) into two lanes, to read with one model.
Qt-free, like the Comparison it is part of; every change is announced.
"""

from __future__ import annotations

from app.session.events import announces
from engine.reading.compare_reads import ReadComparison, compare_reads


def _lane_name(index: int) -> str:
    return chr(65 + index)


class ReadingLanes:
    """The Comparison's reading methods (a mixin: it uses the Comparison's lanes,
    `_touch` and `events`)."""

    read_comparison: ReadComparison | None = None  # the two reads compared
    read_lanes: tuple[int, int] | None = None  # the lanes it compares
    read_row: int | None = None  # the row selected

    @announces
    def set_reading(self, index: int | None, on: bool) -> None:
        """Lane `index` (None: every lane) reads its text instead of generating."""
        for lane in self.lanes if index is None else [self.lanes[index]]:
            if lane.reading != bool(on):
                lane.reading = bool(on)
                self._touch(lane.index)

    @property
    def all_reading(self) -> bool:
        return all(lane.reading for lane in self.lanes)

    @announces
    def load_pair(self, text_a: str, text_b: str) -> bool:
        """Two lanes reading `text_a` and `text_b` with lane A's model (a pair of
        statements). False (nothing changes) while lanes run."""
        if self.busy:
            return False
        self.set_lane_count(2)
        self.set_shared_prompt(text_a, same=False)
        self.set_prompt(0, text_a)
        self.set_prompt(1, text_b)
        a = self.lanes[0]
        self.set_model(1, a.model_path, a.model_name)
        self.set_reading(None, True)
        return True

    def _clear_reads(self) -> None:
        if self.read_row is not None:
            self.events.note("read_row_selected", None)
        self.read_comparison, self.read_lanes, self.read_row = None, None, None
        for lane in self.lanes:
            lane.focus = None

    def _compare_reads(self) -> str | None:
        """Compare the first two reading lanes that read something; their note."""
        done = [x for x in self.lanes if x.state.reading and x.state.n and x.state.error is None]
        if len(done) < 2:
            return None
        a, b = done[:2]
        self.read_comparison = compare_reads(
            a.state.tokens, b.state.tokens, a.state.prompt, b.state.prompt
        )
        self.read_lanes = (a.index, b.index)
        return f"Lanes {_lane_name(a.index)}/{_lane_name(b.index)} read: {read_note(self)}"

    @announces
    def select_read_row(self, row: int | None) -> None:
        """Point both reading lanes at `row` of the read comparison (None: at nothing)."""
        c = self.read_comparison
        if c is None or (row is not None and not 0 <= row < len(c.labels)):
            return
        self.read_row = row
        for index, steps in zip(self.read_lanes, (c.steps_a, c.steps_b), strict=True):
            self.lanes[index].focus = steps[row] if row is not None else None
        self._touch(None)
        self.events.note("read_row_selected", row)


def read_note(comparison) -> str:
    """One line on the two reads: bits per byte of each, and where they differ most."""
    c = comparison.read_comparison
    a, b = (_lane_name(i) for i in comparison.read_lanes)
    parts = [
        f"{name} {bpb:.3f} bits/byte"
        for name, bpb in ((a, c.bits_per_byte_a), (b, c.bits_per_byte_b))
        if bpb is not None
    ]
    if c.most_delta:
        row = c.most_delta[0]
        unit = "nats" if c.kind == "tokens" else "bits"
        parts.append(f"most apart at {c.labels[row].strip()!r} (Δ {c.delta[row]:+.2f} {unit})")
    return " · ".join(parts)
