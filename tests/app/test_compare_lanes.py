"""Compare's lanes say what they hold, on a stand-in engine bridge (no model): with one
prompt for all lanes every lane box shows it; runs opened in Compare bring their own
settings and seeds; Run all clears the last divergence and says which model loads."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.compare.window import CompareWindow
from app.session.run_state import RunState
from engine.records import DoneRecord, ModelRecord, TokenRecord
from engine.settings import SamplingSettings


class StandInBridge(QObject):
    """The signals and calls of EngineBridge; a test plays the engine."""

    progress = Signal(str, float)
    model_loaded = Signal(object)
    tokens = Signal(list)
    finished = Signal(object)
    failed = Signal(object)
    busy_changed = Signal(bool)

    def __init__(self):
        super().__init__()
        self.busy, self.asked = False, []

    def generate(self, prompt, settings, model, sink=None, *rest) -> bool:
        self.asked.append((prompt, model))
        return True

    def cancel(self) -> None: ...

    def cleanup(self) -> None: ...


def tok(step, tid):
    return TokenRecord(
        step, tid, f"t{tid}", -0.7, 0.5, -0.7, (), (), 1.0, 1.0, 0.1 * step, 0.01, 5 + step
    )


def done(seed):
    return DoneRecord("length", "", 5, 3, 0.1, 50.0, 30.0, None, None, 2048, seed, 0.3)


def model(path):
    return ModelRecord(path.rsplit("/", 1)[-1], path, "llama", "4-bit", 10**8, 2048, "cpu", 0.1)


def window(qtbot):
    bridge = StandInBridge()
    win = CompareWindow(bridge=bridge)
    qtbot.addWidget(win)
    for lane in win.lanes:
        lane.model.addItem("Model A · Q4_1", "/models/a")
        lane.model.addItem("Model B · 8-bit", "/models/b")
        lane.model.setCurrentIndex(lane.model.findData("/models/a"))
    return win, bridge


def play(win, bridge, path, ids, seed):
    """The engine runs the lane in flight: its model, its tokens, its end."""
    bridge.model_loaded.emit(model(path))
    bridge.tokens.emit([tok(i, t) for i, t in enumerate(ids)])
    bridge.finished.emit(done(seed))
    bridge.busy_changed.emit(False)


def test_one_prompt_for_all_lanes_shows_in_every_lane(qtbot):
    win, _bridge = window(qtbot)
    win.lanes[1].prompt.setPlainText("an old prompt")
    win.set_shared_prompt("Name a river.", same=True)
    assert [lane.prompt.toPlainText() for lane in win.lanes] == ["Name a river."] * 2
    assert all(lane.prompt.isReadOnly() for lane in win.lanes)
    win.set_lane_count(3)  # a new lane too
    assert win.lanes[2].prompt.toPlainText() == "Name a river."
    win.same_prompt.setChecked(False)  # each lane's own prompt again, editable
    assert not any(lane.prompt.isReadOnly() for lane in win.lanes)


def test_runs_opened_in_compare_bring_their_settings_and_seeds(qtbot):
    win, _bridge = window(qtbot)
    states = []
    for seed, ids in ((11, [1, 2, 3]), (12, [1, 4, 5])):
        s = RunState(prompt="Q", settings=SamplingSettings(max_tokens=8, temperature=0.9))
        s.add_tokens([tok(i, t) for i, t in enumerate(ids)])
        s.done, s.model = done(seed), model("/models/b")
        states.append(s)
    win.show_runs(states)
    summaries = [lane.more.text() for lane in win.lanes]
    assert summaries == [
        "T 0.90 · top-p 1.00 · seed 11 · max 8",
        "T 0.90 · top-p 1.00 · seed 12 · max 8",
    ]
    assert [lane.prompt.toPlainText() for lane in win.lanes] == ["Q", "Q"]
    assert [lane.model_path() for lane in win.lanes] == ["/models/b"] * 2
    assert "diverge at step 1" in win.divergence_info.text()


def test_run_all_clears_the_last_divergence_and_says_which_model_loads(qtbot):
    win, bridge = window(qtbot)
    win.set_shared_prompt("Q", same=True)
    win.run_all()
    assert win.lanes[0].status.text() == "loading Model A · Q4_1…"  # nothing loaded yet
    play(win, bridge, "/models/a", [1, 2, 3], 0)
    assert win.lanes[1].status.text() == "running…"  # the same model, loaded
    play(win, bridge, "/models/a", [1, 9, 9], 1)
    assert "diverge at step 1" in win.divergence_info.text() and win.divergence_ids
    b = win.lanes[1]
    b.model.setCurrentIndex(b.model.findData("/models/b"))
    win.run_all()
    assert "diverge" not in win.divergence_info.text() and win.divergence_ids == []
    assert all(lane.divergence is None for lane in win.lanes)
    assert win.lanes[0].status.text() == "running…"
    play(win, bridge, "/models/a", [1, 2, 3], 0)
    assert b.status.text() == "loading Model B · 8-bit…"
    bridge.model_loaded.emit(model("/models/b"))
    assert b.status.text() == "running…"
