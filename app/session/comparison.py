"""Comparison: Compare's lanes as a Qt-free model, and the only way to change them.

What it holds: two to four `Lane`s (each its own prompt, model, settings, reading,
run, divergence step, status and error, and every run it finished here), the
shared prompt and the "same prompt for all lanes" switch, the run queue and the
lane in flight, the model the engine has loaded, and the divergence on show (the
lanes of its group and the selected lane and step). Every change is one of the
methods below, and each announces what changed (app/session/events.py); the
Compare window and its lanes subscribe and draw from it. It knows nothing of the
engine: the window starts each lane's run and reports what the engine says.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from app.session.comparison_reads import ReadingLanes
from app.session.events import Announcer, announces
from app.session.run_state import RunState
from engine.models.display_name import model_name
from engine.run.compare_stats import first_divergence
from engine.run.settings import SamplingSettings

MAX_LANES = 4  # Compare shows two to four lanes
MIN_LANES = 2
LANE_MAX_TOKENS = 48  # a new lane's token limit: a short answer per lane
EMPTY_PROMPT = "The prompt is empty: type one above or in this lane."
NOTE_START = "Lanes with the same prompt and model are compared here."
NOTE_RUNNING = "The lanes are compared when they have run."
NOTE_NONE = "No two lanes share a prompt and model."

EVENTS = (
    "lanes_changed",  # (int) lanes were added or removed: how many there are now
    "lane_changed",  # (int | None) a lane's prompt, model, settings, run, status, error
    #                  or divergence changed (None: several lanes)
    "prompt_changed",  # (str, bool) the shared prompt and the "same prompt" switch
    "tokens_added",  # (int, records) tokens of the lane in flight arrived
    "compared",  # (str) the lanes were compared (or the comparison cleared): its note
    "step_selected",  # ((lane, step) | None) the step the divergence chart shows
    "read_row_selected",  # (int | None) the row of the two reads' comparison selected
)


def lane_name(index: int) -> str:
    """'A' for lane 0, 'B' for lane 1, …"""
    return chr(65 + index)


@dataclass
class Lane:
    """One lane: what it runs and the run it shows."""

    index: int
    prompt: str = ""  # its own prompt (the shared one is used while the switch is on)
    model_path: str | None = None  # the engine's model spec (None: the default model)
    model_name: str = ""  # as the picker names it
    settings: SamplingSettings = field(default_factory=SamplingSettings)
    state: RunState = field(default_factory=RunState)  # its last run, or one shown
    divergence: int | None = None  # the first step where it differs from a comparable lane
    status: str = "idle"
    error: str | None = None  # why its run failed, in words
    runs: list = field(default_factory=list)  # DoneRecords of every run it finished here
    reading: bool = False  # it reads its text through the model (engine/reading)
    focus: int | None = None  # the step the two reads' comparison points at

    @property
    def ran_on(self) -> str | None:
        """The model its run used (its own record), else the one it is set to."""
        return self.state.model.path if self.state.model is not None else self.model_path


def comparable(a: Lane, b: Lane) -> bool:
    """Two lanes generated from the same prompt on the same model: their tokens can be
    compared (reads are compared by the text's probabilities: comparison_reads.py)."""
    same = a.state.prompt == b.state.prompt and a.ran_on == b.ran_on
    return same and not a.state.reading and not b.state.reading


class Comparison(ReadingLanes):
    """Compare's state (see the module's docstring; its reading lanes: ReadingLanes)."""

    def __init__(self, lanes: int = MIN_LANES):
        self.lanes: list[Lane] = []
        self.shared_prompt = ""
        self.same_prompt = True
        self.queue: list[int] = []  # lanes waiting to run, in order
        self.running: int | None = None  # the lane in flight
        self.comparison_id: str | None = None  # tags the journal's runs of one Run all
        self.loaded_path: str | None = None  # the model spec the engine has loaded
        self.group: tuple[int, ...] = ()  # lanes of the divergence shown
        self.selected: tuple[int, int] | None = None  # (lane, step) the chart shows
        self.compared = False  # the lanes were compared since the last Run all
        self.note = NOTE_START
        self.events = Announcer(EVENTS)
        self._touched: set[int] = set()
        self.events.lane_changed.connect(lambda _i: self._touched.clear())  # first: reset
        self.set_lane_count(lanes)

    def _touch(self, index: int | None) -> None:
        """Note that lane `index` changed (None: all); several lanes announce None."""
        self._touched.update(range(len(self.lanes)) if index is None else (index,))
        one = len(self._touched) == 1 and index is not None
        self.events.note("lane_changed", index if one else None)

    # -- what a lane runs -------------------------------------------------------------------
    def prompt_of(self, index: int) -> str:
        """The prompt lane `index` runs: the shared one while the switch is on."""
        return self.shared_prompt if self.same_prompt else self.lanes[index].prompt

    @property
    def busy(self) -> bool:
        """A lane is in flight or waiting to run."""
        return self.running is not None or bool(self.queue)

    @announces
    def set_lane_count(self, n: int) -> None:
        """Two to four lanes; a new lane has its own seed (its index) and a short limit."""
        n = max(MIN_LANES, min(int(n), MAX_LANES))
        if n == len(self.lanes) or self.busy:
            return
        while len(self.lanes) < n:
            i = len(self.lanes)
            settings = SamplingSettings(max_tokens=LANE_MAX_TOKENS, seed=i)
            self.lanes.append(Lane(i, settings=settings))
        del self.lanes[n:]
        self.group = tuple(i for i in self.group if i < n)
        if self.selected is not None and self.selected[0] >= n:
            self.selected = None
            self.events.note("step_selected", None)
        self.events.note("lanes_changed", n)

    @announces
    def set_shared_prompt(self, text: str, same: bool | None = None) -> None:
        """The prompt for every lane, and the switch (None: as it is). Turning the switch
        off leaves each lane with the shared prompt its box showed, to edit."""
        if same is not None and not same and self.same_prompt:
            for lane in self.lanes:
                lane.prompt = text
            self._touch(None)
        self.shared_prompt = text
        if same is not None:
            self.same_prompt = bool(same)
        self.events.note("prompt_changed", self.shared_prompt, self.same_prompt)

    @announces
    def set_prompt(self, index: int, text: str) -> None:
        """Lane `index`'s own prompt."""
        self.lanes[index].prompt = text
        self._touch(index)

    @announces
    def set_model(self, index: int, path: str | None, name: str) -> None:
        """The model lane `index` runs on (`path`: the engine's spec; `name`: the picker's)."""
        lane = self.lanes[index]
        lane.model_path, lane.model_name = path, name
        self._touch(index)

    @announces
    def set_settings(self, index: int, settings: SamplingSettings) -> None:
        """Lane `index`'s sampling settings (its seed is always its own)."""
        self.lanes[index].settings = settings
        self._touch(index)

    @announces
    def copy_lane(self, index: int, source: int) -> None:
        """Lane `source`'s prompt, model and settings into lane `index`."""
        src = self.lanes[source]
        self.set_prompt(index, src.prompt)
        self.set_model(index, src.model_path, src.model_name)
        self.set_settings(index, src.settings)

    # -- running ----------------------------------------------------------------------------
    @announces
    def run_all(self) -> bool:
        """Queue every lane with a prompt for a new run (a lane without one says so);
        the last comparison is cleared. False (nothing changes) while lanes still run."""
        if self.busy:
            return False
        self.comparison_id = secrets.token_hex(4)
        self._clear(NOTE_RUNNING)
        for lane in self.lanes:
            prompt = self.prompt_of(lane.index)
            # Lanes are compared on TTFT and prefill speed: each prefills its whole
            # prompt, never a cache an earlier lane left behind.
            settings = lane.settings.with_(prompt_cache=False)
            lane.state = RunState(prompt=prompt, settings=settings, reading=lane.reading)
            lane.error = None if prompt.strip() else EMPTY_PROMPT
            lane.status = "queued" if prompt.strip() else "error"
            if prompt.strip():
                self.queue.append(lane.index)
        self._touch(None)
        if not self.queue:
            self.compare()
        return True

    @property
    def next_lane(self) -> Lane | None:
        """The lane to start next (None: none is waiting)."""
        return self.lanes[self.queue[0]] if self.queue and self.running is None else None

    @announces
    def start(self, index: int) -> None:
        """The engine took lane `index`'s run: it says whether its model must load first."""
        lane = self.lanes[index]
        self.queue.remove(index)
        self.running = index
        path = lane.model_path
        loading = self.loaded_path is None or (path is not None and path != self.loaded_path)
        lane.status = f"loading {lane.model_name or 'the model'}…" if loading else "running…"
        self._touch(index)

    @announces
    def name_run(self, index: int, run_id: str | None) -> None:
        """The journal's id for lane `index`'s run (None: the history is not written)."""
        self.lanes[index].state.name(run_id)
        self._touch(index)

    def _in_flight(self) -> Lane | None:
        return self.lanes[self.running] if self.running is not None else None

    @announces
    def model_loaded(self, record) -> None:
        """The engine reports the model the lane in flight runs on (a ModelRecord)."""
        if (lane := self._in_flight()) is None:
            return
        lane.state.ran_on(record)
        self.loaded_path = lane.model_path
        if lane.status.startswith("loading"):
            lane.status = "running…"
        self._touch(lane.index)

    @announces
    def add_tokens(self, records: list) -> None:
        """Tokens of the lane in flight arrived (the engine's batch, in order)."""
        if (lane := self._in_flight()) is None:
            return
        lane.state.add_tokens(records)
        self.events.note("tokens_added", lane.index, records)

    @announces
    def finish(self, record) -> None:
        """The lane in flight ended with `record` (a DoneRecord)."""
        if (lane := self._in_flight()) is None:
            return
        lane.state.end(record)
        lane.runs.append(record)
        lane.status = record.finish_reason
        self._touch(lane.index)

    @announces
    def fail(self, record) -> None:
        """The lane in flight failed with `record` (an ErrorRecord)."""
        if (lane := self._in_flight()) is None:
            return
        lane.state.end(record)
        lane.error, lane.status = record.message, "error"
        self._touch(lane.index)

    @announces
    def run_ended(self) -> None:
        """The engine is free again: no lane is in flight; with none waiting, compare."""
        if self.running is not None:
            self._touch(self.running)
        self.running = None
        if not self.queue:
            self.compare()

    @announces
    def stop(self, index: int) -> bool:
        """Stop lane `index`: a waiting lane is skipped. Returns whether it is in flight
        (then the caller cancels the engine's run; its end arrives as usual)."""
        if index in self.queue:
            self.queue.remove(index)
            self.lanes[index].status = "skipped"
            self._touch(index)
        return index == self.running

    @announces
    def stop_all(self) -> bool:
        """Skip every waiting lane. Returns whether a lane is in flight (to cancel)."""
        for index in list(self.queue):
            self.stop(index)
        return self.running is not None

    @announces
    def engine_gone(self) -> None:
        """The engine stopped (Compare closed): nothing waits, nothing runs, nothing loaded."""
        self.stop_all()
        if (lane := self._in_flight()) is not None:
            lane.status = "stopped"
            self._touch(lane.index)
        self.running, self.loaded_path = None, None

    # -- comparing ----------------------------------------------------------------------------
    def pairs(self):
        """(lane a, lane b, first differing step or None) for every comparable pair of
        lanes with tokens, in lane order."""
        for i, a in enumerate(self.lanes):
            for b in self.lanes[i + 1 :]:
                if a.state.n and b.state.n and comparable(a, b):
                    ids = [t.token_id for t in a.state.tokens], [t.token_id for t in b.state.tokens]
                    yield a, b, first_divergence(*ids)

    def _clear(self, note: str) -> None:
        for lane in self.lanes:
            lane.divergence = None
        self.group, self.selected, self.compared, self.note = (), None, False, note
        self._touch(None)
        self.events.note("compared", note)
        self.events.note("step_selected", None)
        self._clear_reads()

    @announces
    def compare(self) -> None:
        """Mark the first differing step of every comparable pair; the first pair's
        group (every lane sharing its prompt and model) is selected at that step."""
        self._clear(NOTE_NONE)
        notes = []
        for a, b, step in self.pairs():
            name = f"{lane_name(a.index)}/{lane_name(b.index)}"
            if step is None:
                notes.append(f"Lanes {name}: identical tokens, no divergence")
                continue
            notes.append(f"Lanes {name} diverge at step {step}")
            for lane in (a, b):
                if lane.divergence is None:
                    lane.divergence = step
            if not self.group:
                self.group = tuple(x.index for x in self.lanes if x.state.n and comparable(x, a))
                self.selected = (a.index, step)
        if (read := self._compare_reads()) is not None:
            notes.append(read)
        self.compared, self.note = True, " · ".join(notes) or NOTE_NONE
        self.events.note("compared", self.note)
        self.events.note("step_selected", self.selected)

    @announces
    def select_step(self, index: int, step: int) -> None:
        """Show lane `index`'s step on the divergence chart (with its group's lanes)."""
        self.selected = (index, step)
        self.events.note("step_selected", self.selected)

    def shown_lanes(self) -> list[Lane]:
        """The lanes the divergence chart shows: the selected lane's group, or itself."""
        if self.selected is None:
            return []
        index = self.selected[0]
        return [self.lanes[i] for i in (self.group if index in self.group else (index,))]

    # -- runs opened from elsewhere -----------------------------------------------------------
    @announces
    def show_runs(self, states: list) -> bool:
        """Show finished runs (two branches of one answer, say: RunStates) as the lanes,
        each with its own prompt, model and settings (the seed it used); nothing runs.
        Returns False (nothing changes) while lanes run or with no run given."""
        if self.busy or not states:
            return False
        states = states[:MAX_LANES]
        self.set_lane_count(max(MIN_LANES, len(states)))
        self.set_shared_prompt(states[0].prompt, same=len({s.prompt for s in states}) == 1)
        for lane, state in zip(self.lanes, states, strict=False):
            self._show_run(lane, state)
        self._touch(None)
        self.compare()
        return True

    def _show_run(self, lane: Lane, state: RunState) -> None:
        settings = state.settings
        seed = getattr(state.done, "seed", None)
        if seed is not None:
            settings = settings.with_(seed=seed)
        lane.prompt, lane.settings, lane.error, lane.runs = state.prompt, settings, None, []
        lane.reading = state.reading
        if state.model is not None:
            lane.model_path, lane.model_name = state.model.path, model_name(state.model)
        copy = RunState(
            prompt=state.prompt,
            settings=settings,
            model=state.model,
            sent=state.sent,
            run_id=state.run_id,
            branch=state.branch,
            reading=state.reading,
        )
        copy.add_tokens(list(state.tokens))
        for record in (state.done, state.error):
            if record is not None:
                copy.end(record)
        lane.state = copy
        if state.error is not None:
            lane.error = state.error.message
        label = state.run_id or "run"
        if state.branch_step is not None:
            label += f" · branch at step {state.branch_step}"
        lane.status = label
