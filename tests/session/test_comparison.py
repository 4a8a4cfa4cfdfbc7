"""Compare's lanes as a Qt-free model (app/session/comparison.py): every method
announces what it changed, nothing changes unannounced, and the rules of issue 37's
points 6 and 7 (lanes say the prompt, settings and seeds of the runs they show; Run
all clears the last divergence and says which model loads) hold without a widget."""

from __future__ import annotations

import math
from dataclasses import astuple

from app.session.comparison import (
    EMPTY_PROMPT,
    EVENTS,
    NOTE_NONE,
    NOTE_RUNNING,
    Comparison,
)
from app.session.run_state import RunState
from engine.run.records import DoneRecord, ErrorRecord, ModelRecord, TokenRecord
from engine.run.settings import SamplingSettings


def tok(step, tid):
    return TokenRecord(
        step, tid, f"t{tid}", -0.7, 0.5, -0.7, (), (), 1.0, 1.0, 0.1 * step, 0.01, 5 + step
    )


def done(seed=0, reason="length"):
    return DoneRecord(reason, "", 5, 3, 0.1, 50.0, 30.0, None, None, 2048, seed, 0.3)


def model(path):
    return ModelRecord(path.rsplit("/", 1)[-1], path, "llama", "4-bit", 10**8, 2048, "cpu", 0.1)


def snapshot(c: Comparison) -> tuple:
    """Everything the comparison holds, to tell whether a call changed it."""
    lanes = tuple(
        (
            lane.prompt,
            lane.model_path,
            lane.model_name,
            astuple(lane.settings),
            id(lane.state),
            lane.state.n,
            lane.state.run_id,
            lane.state.done,
            lane.state.error,
            lane.state.model,
            lane.divergence,
            lane.status,
            lane.error,
            len(lane.runs),
            lane.reading,
            lane.focus,
        )
        for lane in c.lanes
    )
    return (lanes, c.shared_prompt, c.same_prompt, tuple(c.queue), c.running) + (
        c.comparison_id,
        c.loaded_path,
        c.group,
        c.selected,
        c.compared,
        c.note,
        c.read_lanes,
        c.read_row,
    )


class Ear:
    """Hears every announcement; `call` checks that a change is never silent."""

    def __init__(self, c: Comparison):
        self.c, self.heard = c, []
        for name in EVENTS:
            getattr(c.events, name).connect(lambda *a, n=name: self.heard.append((n, a)))

    def call(self, method: str, *args):
        before = snapshot(self.c)
        self.heard.clear()
        result = getattr(self.c, method)(*args)
        if snapshot(self.c) != before:
            assert self.heard, f"{method} changed the comparison without announcing it"
        return result

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.heard]


def ready(prompt="Q") -> tuple[Comparison, Ear]:
    c = Comparison()
    for i in range(2):
        c.set_model(i, "/models/a", "Model A · Q4_1")
    c.set_shared_prompt(prompt, same=True)
    return c, Ear(c)


def play(ear: Ear, path: str, ids: list[int], seed: int) -> None:
    """The engine runs the next lane: its model, its tokens, its end."""
    c = ear.c
    ear.call("start", c.next_lane.index)
    ear.call("model_loaded", model(path))
    ear.call("add_tokens", [tok(i, t) for i, t in enumerate(ids)])
    ear.call("finish", done(seed))
    ear.call("run_ended")


def test_every_method_announces_what_it_changed():
    c = Comparison()
    ear = Ear(c)
    assert [lane.settings.seed for lane in c.lanes] == [0, 1]  # each lane its own seed
    ear.call("set_lane_count", 3)
    assert ear.heard == [("lanes_changed", (3,))] and len(c.lanes) == 3
    ear.call("set_shared_prompt", "Name a river.", False)
    assert ear.names == ["lane_changed", "prompt_changed"]
    assert ear.heard[1] == ("prompt_changed", ("Name a river.", False))
    ear.call("set_prompt", 1, "Name a lake.")
    assert ear.heard == [("lane_changed", (1,))] and c.prompt_of(1) == "Name a lake."
    ear.call("set_model", 2, "/models/b", "Model B · 8-bit")
    assert ear.heard == [("lane_changed", (2,))]
    hot = SamplingSettings(temperature=1.2, seed=7, max_tokens=4)
    ear.call("set_settings", 0, hot)
    assert ear.heard == [("lane_changed", (0,))] and c.lanes[0].settings == hot
    ear.call("copy_lane", 1, 0)  # three changes of one lane: announced once
    assert ear.heard == [("lane_changed", (1,))]
    assert (c.lanes[1].prompt, c.lanes[1].settings) == ("Name a river.", hot)
    assert ear.call("run_all") is True
    assert ear.names == ["lane_changed", "compared", "step_selected"]
    assert ear.heard[0] == ("lane_changed", (None,))  # every lane: a new run each
    assert c.queue == [0, 1, 2] and c.note == NOTE_RUNNING
    ear.call("start", 0)
    assert ear.heard == [("lane_changed", (0,))] and c.running == 0 and c.queue == [1, 2]
    ear.call("name_run", 0, "r1")
    assert ear.heard == [("lane_changed", (0,))] and c.lanes[0].state.run_id == "r1"
    ear.call("model_loaded", model("/models/a"))
    assert ear.heard == [("lane_changed", (0,))] and c.loaded_path is None  # the default
    batch = [tok(0, 5), tok(1, 6)]
    ear.call("add_tokens", batch)
    assert ear.heard == [("tokens_added", (0, batch))] and c.lanes[0].state.n == 2
    ear.call("finish", done(7))
    assert ear.heard == [("lane_changed", (0,))] and c.lanes[0].status == "length"
    ear.call("run_ended")  # lanes still wait: nothing to compare yet
    assert ear.heard == [("lane_changed", (0,))] and c.running is None
    ear.call("start", 1)
    ear.call("fail", ErrorRecord("model not found"))
    assert ear.heard == [("lane_changed", (1,))]
    assert (c.lanes[1].status, c.lanes[1].error) == ("error", "model not found")
    assert ear.call("stop", 2) is False  # waiting: skipped
    assert ear.heard == [("lane_changed", (2,))] and c.lanes[2].status == "skipped"
    assert ear.call("stop", 1) is True  # in flight: the caller cancels the engine's run
    ear.call("run_ended")  # none waits: compared
    assert ear.names == ["lane_changed", "compared", "step_selected"]
    ear.call("select_step", 0, 1)
    assert ear.heard == [("step_selected", ((0, 1),))]
    assert [lane.index for lane in c.shown_lanes()] == [0]


def test_nothing_changes_while_lanes_run():
    c, ear = ready()
    c.run_all()
    c.start(0)
    for method, args in (
        ("run_all", ()),
        ("set_lane_count", (4,)),
        ("show_runs", ([RunState(prompt="x")],)),
    ):
        before = snapshot(c)
        assert ear.call(method, *args) in (False, None)
        assert snapshot(c) == before and ear.heard == []


def test_one_prompt_for_all_lanes_and_each_lane_its_own():
    c, ear = ready("Name a river.")
    c.set_prompt(1, "an old prompt")
    assert [c.prompt_of(i) for i in range(2)] == ["Name a river."] * 2
    ear.call("set_lane_count", 3)
    assert c.prompt_of(2) == "Name a river."
    # Unticked, every lane keeps the prompt its box showed, to edit on its own.
    ear.call("set_shared_prompt", "Name a river.", False)
    assert [lane.prompt for lane in c.lanes] == ["Name a river."] * 3
    c.run_all()
    assert [lane.state.prompt for lane in c.lanes] == ["Name a river."] * 3
    # An empty prompt: that lane says so, the others run.
    c2, _ = ready("")
    c2.set_shared_prompt("", same=False)
    c2.set_prompt(0, "Hi")
    c2.run_all()
    assert c2.queue == [0] and c2.lanes[1].error == EMPTY_PROMPT
    assert c2.lanes[1].status == "error"


def test_run_all_clears_the_last_divergence_and_says_which_model_loads():
    c, ear = ready()
    c.run_all()
    assert c.lanes[0].state.settings.prompt_cache is False  # each lane prefills its prompt
    ear.call("start", 0)
    assert c.lanes[0].status == "loading Model A · Q4_1…"  # nothing loaded yet
    ear.call("model_loaded", model("/models/a"))
    assert c.lanes[0].status == "running…"
    ear.call("add_tokens", [tok(i, t) for i, t in enumerate([1, 2, 3])])
    ear.call("finish", done(0))
    ear.call("run_ended")
    ear.call("start", 1)
    assert c.lanes[1].status == "running…"  # the same model, loaded
    ear.call("model_loaded", model("/models/a"))
    ear.call("add_tokens", [tok(i, t) for i, t in enumerate([1, 9, 9])])
    ear.call("finish", done(1))
    ear.call("run_ended")
    assert c.note == "Lanes A/B diverge at step 1" and c.selected == (0, 1)
    assert [lane.divergence for lane in c.lanes] == [1, 1] and c.group == (0, 1)
    ear.call("set_model", 1, "/models/b", "Model B · 8-bit")
    ear.call("run_all")
    assert [lane.divergence for lane in c.lanes] == [None, None]
    assert (c.note, c.selected, c.group, c.compared) == (NOTE_RUNNING, None, (), False)
    assert ("step_selected", (None,)) in ear.heard
    play(ear, "/models/a", [1, 2, 3], 0)
    ear.call("start", 1)
    assert c.lanes[1].status == "loading Model B · 8-bit…"
    ear.call("model_loaded", model("/models/b"))
    assert c.lanes[1].status == "running…"
    ear.call("finish", done(1))
    ear.call("run_ended")
    assert c.note == NOTE_NONE and c.selected is None  # other models: not comparable
    assert [len(lane.runs) for lane in c.lanes] == [2, 2]  # every run, for its cost


def test_runs_opened_in_compare_bring_their_prompt_settings_seeds_and_model():
    c, ear = ready("an old prompt")
    states = []
    for seed, ids in ((11, [1, 2, 3]), (12, [1, 4, 5])):
        s = RunState(prompt="Q", settings=SamplingSettings(max_tokens=8, temperature=0.9))
        s.add_tokens([tok(i, t) for i, t in enumerate(ids)])
        s.done, s.model, s.run_id = done(seed), model("/models/b"), f"run{seed}"
        states.append(s)
    assert ear.call("show_runs", states) is True
    assert [lane.settings.seed for lane in c.lanes] == [11, 12]
    assert [lane.settings.max_tokens for lane in c.lanes] == [8, 8]
    assert [c.prompt_of(i) for i in range(2)] == ["Q", "Q"] and c.same_prompt
    assert [lane.model_path for lane in c.lanes] == ["/models/b"] * 2
    assert [lane.state.run_id for lane in c.lanes] == ["run11", "run12"]
    assert [lane.status for lane in c.lanes] == ["run11", "run12"]
    assert all(lane.state is not s for lane, s in zip(c.lanes, states, strict=True))
    assert c.note == "Lanes A/B diverge at step 1" and c.selected == (0, 1)
    # Different prompts: each lane its own, the switch off; a third run is a third lane.
    third = RunState(prompt="R")
    third.add_tokens([tok(0, 1)])
    c.show_runs([*states, third])
    assert len(c.lanes) == 3 and not c.same_prompt
    assert [c.prompt_of(i) for i in range(3)] == ["Q", "Q", "R"]


def test_identical_lanes_and_lanes_of_another_prompt_do_not_diverge():
    c = Comparison(3)
    c.set_shared_prompt("", same=False)
    for i, prompt in enumerate(("Q", "Q", "R")):
        c.set_prompt(i, prompt)
        c.set_model(i, "/m", "M")
    c.run_all()
    ear = Ear(c)
    for ids in ([1, 2], [1, 2], [3, 4]):
        play(ear, "/m", ids, 0)
    assert c.note == "Lanes A/B: identical tokens, no divergence"
    assert [lane.divergence for lane in c.lanes] == [None] * 3 and c.selected is None
    assert c.compared


def test_lanes_changed_names_the_lane_or_none_for_several():
    c, ear = ready()
    ear.call("set_prompt", 0, "x")
    assert ear.heard == [("lane_changed", (0,))]
    ear.call("stop_all")  # nothing waits: no change, no announcement
    assert ear.heard == []
    c.run_all()
    ear.call("stop_all")  # two lanes skipped: one announcement for both
    assert ear.heard == [("lane_changed", (None,))]
    assert [lane.status for lane in c.lanes] == ["skipped", "skipped"]


def test_a_closed_window_leaves_no_lane_running_and_no_model_loaded():
    c, ear = ready()
    c.run_all()
    play(ear, "/models/a", [1], 0)
    c.start(1)
    ear.call("engine_gone")
    assert (c.running, c.queue, c.loaded_path) == (None, [], None)
    assert c.lanes[1].status == "stopped" and ear.names == ["lane_changed"]
    c.run_all()
    c.start(0)
    assert c.lanes[0].status == "loading Model A · Q4_1…"  # a new engine loads again


def rtok(step, text, logprob):
    """A token read from a text (its own text as its bytes)."""
    return TokenRecord(
        step, 100 + step, text, logprob, 0.5, logprob, (), (), 1.0, 1.0, 0.0, 0.0, 1, read=True
    )


TRUE = [("The", -3.0), (" capital", -5.0), (" is", -1.0), (" Canberra", -2.0), (".", -0.5)]
FALSE = [("The", -3.0), (" capital", -5.0), (" is", -1.0), (" Sydney", -1.25), (".", -0.75)]


def test_reading_lanes_are_set_announced_run_and_compared_by_their_text():
    c = Comparison(3)
    c.set_model(0, "/m", "M")
    ear = Ear(c)
    ear.call("set_reading", 1, True)
    assert ear.heard == [("lane_changed", (1,))] and [x.reading for x in c.lanes] == [0, 1, 0]
    ear.call("set_reading", 1, True)  # as it is: nothing changes, nothing is heard
    assert ear.heard == []
    ear.call("set_reading", None, False)
    assert ear.heard == [("lane_changed", (1,))] and not c.all_reading
    # The demonstration: a pair of statements, two lanes, one model, both reading.
    assert ear.call("load_pair", "The capital is Canberra.", "The capital is Sydney.")
    assert "lanes_changed" in ear.names and len(c.lanes) == 2 and c.all_reading
    assert [c.prompt_of(i) for i in range(2)] == [
        "The capital is Canberra.",
        "The capital is Sydney.",
    ]
    assert [x.model_path for x in c.lanes] == ["/m", "/m"] and not c.same_prompt
    c.run_all()
    assert [x.state.reading for x in c.lanes] == [True, True]
    for pieces in (TRUE, FALSE):
        ear.call("start", c.next_lane.index)
        ear.call("add_tokens", [rtok(i, t, lp) for i, (t, lp) in enumerate(pieces)])
        ear.call("finish", done())
        ear.call("run_ended")
    r = c.read_comparison
    assert c.read_lanes == (0, 1) and r.kind == "words" and c.selected is None
    assert r.labels == ("The", "capital", "is", "Canberra / Sydney", ".")
    row = r.labels.index("Canberra / Sydney")
    assert abs(r.delta[row] - (1.25 - 2.0) / math.log(2)) < 1e-12  # Sydney: 0.75 nats less
    assert r.most_delta[0] == row and "Canberra / Sydney" in c.note
    assert "identical tokens" not in c.note  # reads are not compared as generations
    # A row selected: each lane points at its own step there; Run all clears it.
    ear.call("select_read_row", row)
    assert ear.names == ["lane_changed", "read_row_selected"]
    assert [x.focus for x in c.lanes] == [3, 3] and c.read_row == row
    ear.call("select_read_row", 99)  # no such row: nothing
    assert ear.heard == []
    ear.call("run_all")
    assert "read_row_selected" in ear.names and c.read_comparison is None
    assert [x.focus for x in c.lanes] == [None, None]


def test_reads_opened_in_compare_are_reading_lanes():
    states = []
    for pieces in (TRUE, TRUE):
        s = RunState(prompt="The capital is Canberra.", reading=True)
        s.add_tokens([rtok(i, t, lp) for i, (t, lp) in enumerate(pieces)])
        s.done = done()
        states.append(s)
    c = Comparison()
    c.show_runs(states)
    assert [x.reading for x in c.lanes] == [True, True]
    assert c.read_comparison.kind == "tokens"  # one text, one tokenization
    assert c.read_comparison.delta == (0.0,) * 5
