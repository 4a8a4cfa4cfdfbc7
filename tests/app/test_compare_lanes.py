"""Compare's lanes draw their Comparison (app/session/comparison.py) and turn a person's
edits into its methods, on a stand-in engine bridge (no model): with one prompt for
all lanes every lane box shows it; runs opened in Compare bring their own settings and
seeds; Run all clears the last divergence and says which model loads; a Compare window
opened again shows the comparison as it was left; new lanes take the playground's
settings; results under a changed prompt, settings or model are marked until run
again; a lane shows its model's load progress."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QWidget

from app.compare.window import CompareWindow
from app.core.session_signals import SessionSignals
from app.session.comparison import Comparison
from app.session.run_state import RunState
from app.session.session import Session
from app.shell.child_windows import ChildWindows
from engine.run.records import DoneRecord, ModelRecord, TokenRecord
from engine.run.settings import SamplingSettings


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
        self.asked.append((prompt, settings, model))
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


def window(qtbot, comparison: Comparison | None = None):
    comparison = comparison or Comparison()
    bridge = StandInBridge()
    win = CompareWindow(comparison, bridge=bridge)
    qtbot.addWidget(win)
    for lane in win.lanes:  # the picker lists two models; each lane is set to A
        lane.model.addItem("Model A · Q4_1", "/models/a")
        lane.model.addItem("Model B · 8-bit", "/models/b")
        lane.model.setCurrentIndex(lane.model.findData("/models/a"))
    return win, bridge, comparison


def play(bridge, path, ids, seed):
    """The engine runs the lane in flight: its model, its tokens, its end."""
    bridge.model_loaded.emit(model(path))
    bridge.tokens.emit([tok(i, t) for i, t in enumerate(ids)])
    bridge.finished.emit(done(seed))
    bridge.busy_changed.emit(False)


def type_into(qtbot, box, text):
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, text)


def test_one_prompt_for_all_lanes_shows_in_every_lane(qtbot):
    win, _bridge, c = window(qtbot)
    c.set_shared_prompt("", same=False)
    type_into(qtbot, win.lanes[1].prompt, "an old prompt")
    assert c.lanes[1].prompt == "an old prompt"  # the lane's own prompt, in the model
    win.same_prompt.click()  # ticked: one prompt for all
    type_into(qtbot, win.shared_prompt, "Name a river.")
    assert c.same_prompt and c.shared_prompt == "Name a river."
    assert [lane.prompt.toPlainText() for lane in win.lanes] == ["Name a river."] * 2
    assert all(lane.prompt.isReadOnly() for lane in win.lanes)
    win.lane_count.setValue(3)  # a new lane too
    assert len(c.lanes) == 3 and win.lanes[2].prompt.toPlainText() == "Name a river."
    win.same_prompt.click()  # each lane's own prompt, editable
    assert not c.same_prompt and not any(lane.prompt.isReadOnly() for lane in win.lanes)
    assert [c.prompt_of(i) for i in range(3)] == ["Name a river."] * 3
    c.set_shared_prompt("From the playground", same=True)  # the model: every box follows
    assert [lane.prompt.toPlainText() for lane in win.lanes] == ["From the playground"] * 3
    assert win.shared_prompt.toPlainText() == "From the playground"
    assert win.same_prompt.isChecked()


def test_lane_edits_are_the_models_and_run_as_set(qtbot):
    win, bridge, c = window(qtbot)
    c.set_shared_prompt("Q", same=True)
    a, b = win.lanes
    a.temperature.setValue(1.2)
    a.seed.setValue(7)
    a.max_tokens.setValue(5)
    a.sampling.system.setPlainText("Be brief.")
    s = c.lanes[0].settings
    assert (s.temperature, s.seed, s.max_tokens, s.system_prompt) == (1.2, 7, 5, "Be brief.")
    assert a.more.text() == "T 1.20 · top-p 1.00 · seed 7 · max 5 · system"
    b.model.setCurrentIndex(b.model.findData("/models/b"))
    assert (c.lanes[1].model_path, c.lanes[1].model_name) == ("/models/b", "Model B · 8-bit")
    b.copy_from.activated.emit(b.copy_from.findData(0))  # "copy from… Lane A"
    assert c.lanes[1].settings == c.lanes[0].settings and c.lanes[1].model_path == "/models/a"
    assert b.seed.value() == 7 and b.model.currentData() == "/models/a"
    assert b.copy_from.currentIndex() == 0
    qtbot.mouseClick(win.run_button, Qt.LeftButton)
    prompt, settings, path = bridge.asked[0]
    assert (prompt, path) == ("Q", "/models/a")
    assert settings == c.lanes[0].settings.with_(prompt_cache=False)


def test_runs_opened_in_compare_bring_their_settings_and_seeds(qtbot):
    win, _bridge, c = window(qtbot)
    c.set_shared_prompt("an old prompt", same=True)
    states = []
    for seed, ids in ((11, [1, 2, 3]), (12, [1, 4, 5])):
        s = RunState(prompt="Q", settings=SamplingSettings(max_tokens=8, temperature=0.9))
        s.add_tokens([tok(i, t) for i, t in enumerate(ids)])
        s.done, s.model = done(seed), model("/models/b")
        states.append(s)
    win.show_runs(states)  # as Branches asks
    assert [lane.settings.seed for lane in c.lanes] == [11, 12]
    summaries = [lane.more.text() for lane in win.lanes]
    assert summaries == [
        "T 0.90 · top-p 1.00 · seed 11 · max 8",
        "T 0.90 · top-p 1.00 · seed 12 · max 8",
    ]
    assert [lane.prompt.toPlainText() for lane in win.lanes] == ["Q", "Q"]
    assert [lane.model.currentData() for lane in win.lanes] == ["/models/b"] * 2
    assert [lane.tokens.plain_text() for lane in win.lanes] == ["t1t2t3", "t1t4t5"]
    assert "diverge at step 1" in win.divergence_info.text()
    assert set(win.divergence_bars) == {"raw (T=1)", "Lane A sampled from", "Lane B sampled from"}


def test_run_all_clears_the_last_divergence_and_says_which_model_loads(qtbot):
    win, bridge, c = window(qtbot)
    c.set_shared_prompt("Q", same=True)
    qtbot.mouseClick(win.run_button, Qt.LeftButton)
    assert win.lanes[0].status.text() == "loading Model A · Q4_1…"  # nothing loaded yet
    play(bridge, "/models/a", [1, 2, 3], 0)
    assert win.lanes[1].status.text() == "running…"  # the same model, loaded
    play(bridge, "/models/a", [1, 9, 9], 1)
    assert "diverge at step 1" in win.divergence_info.text() and win.divergence_ids
    assert [lane.divergence for lane in c.lanes] == [1, 1] and win.lanes[0].div_line.isVisible()
    b = win.lanes[1]
    b.model.setCurrentIndex(b.model.findData("/models/b"))
    qtbot.mouseClick(win.run_button, Qt.LeftButton)
    assert "diverge" not in win.divergence_info.text() and win.divergence_ids == []
    assert all(lane.divergence is None for lane in c.lanes)
    assert not any(lane.div_line.isVisible() for lane in win.lanes)
    assert [lane.tokens.plain_text() for lane in win.lanes] == ["", ""]  # new runs
    assert win.lanes[0].status.text() == "running…"
    play(bridge, "/models/a", [1, 2, 3], 0)
    assert b.status.text() == "loading Model B · 8-bit…"
    bridge.model_loaded.emit(model("/models/b"))
    assert b.status.text() == "running…"
    bridge.tokens.emit([tok(0, 4)])
    assert b.tokens.plain_text() == "t4"  # streamed into the lane as it arrives


def test_stop_skips_a_waiting_lane(qtbot):
    win, bridge, c = window(qtbot)
    c.set_shared_prompt("Q", same=True)
    win.run_all()
    qtbot.mouseClick(win.lanes[1].stop_button, Qt.LeftButton)
    assert c.queue == [] and win.lanes[1].status.text() == "skipped"
    play(bridge, "/models/a", [1, 2], 0)
    assert len(bridge.asked) == 1 and c.running is None


def test_compare_opened_again_shows_the_comparison_as_it_was(qtbot):
    win, bridge, c = window(qtbot)
    c.set_lane_count(3)
    c.set_shared_prompt("Q", same=True)
    win.run_all()
    play(bridge, "/models/a", [1, 2, 3], 0)
    win.close()  # the second lane was in flight: stopped, the third skipped
    assert (c.running, c.queue) == (None, [])
    assert [lane.status for lane in c.lanes] == ["length", "stopped", "skipped"]
    again = CompareWindow(c, bridge=StandInBridge())
    qtbot.addWidget(again)
    assert len(again.lanes) == 3 and again.lane_count.value() == 3
    assert [lane.status.text() for lane in again.lanes] == ["length", "stopped", "skipped"]
    assert again.lanes[0].tokens.plain_text() == "t1t2t3"
    assert again.shared_prompt.toPlainText() == "Q"
    assert again.lanes[0].model.currentData() == "/models/a"
    c.set_shared_prompt("new", same=True)
    assert again.shared_prompt.toPlainText() == "new"
    assert win.shared_prompt.toPlainText() == "Q"  # the closed window follows no more


def test_new_lanes_start_from_the_playground_settings(qtbot):
    """Opened from the playground, lanes on the comparison's defaults take its settings
    (each its own seed); a lane the person set keeps its own, also when opened again."""
    playground = SamplingSettings(temperature=0.3, top_p=0.9, max_tokens=200, seed=99)
    parent = QWidget()
    qtbot.addWidget(parent)
    model = SessionSignals(Session(), parent)
    c = model.session.comparison
    c.set_settings(1, c.lanes[1].settings.with_(temperature=1.5))  # lane B: the person's
    windows = ChildWindows(
        parent, model, lambda: None, lambda: "Q", lambda: (None, "Q", playground)
    )
    win = windows.open_compare()
    assert c.lanes[0].settings == playground.with_(seed=0)
    assert (c.lanes[1].settings.temperature, c.lanes[1].settings.max_tokens) == (1.5, 48)
    assert win.lanes[0].more.text() == "T 0.30 · top-p 0.90 · seed 0 · max 200"
    win.lane_count.setValue(3)  # a lane added now
    assert c.lanes[2].settings == playground.with_(seed=2)
    win.close()
    playground = playground.with_(temperature=1.0)
    windows.open_compare().close()  # opened again: the lanes keep what they took
    assert [lane.settings.temperature for lane in c.lanes] == [0.3, 1.5, 0.3]


def test_results_under_a_changed_prompt_settings_or_model_are_marked(qtbot):
    win, bridge, c = window(qtbot)
    a, b = win.lanes
    c.set_shared_prompt("Q", same=True)
    win.run_all()
    play(bridge, "/models/a", [1, 2, 3], 0)
    play(bridge, "/models/a", [1, 2, 4], 1)
    assert not any(lane.stale_parts() for lane in win.lanes)
    assert a.stale.isHidden() and a.veils[0].isHidden()
    type_into(qtbot, win.shared_prompt, "Another question")
    assert not a.stale.isHidden() and not a.veils[0].isHidden() and not b.veils[1].isHidden()
    assert a.stale.text() == "These results are for the earlier prompt: Run all to update them."
    c.set_shared_prompt("Q", same=True)  # back to the prompt they ran on: theirs again
    assert a.stale.isHidden() and a.veils[0].isHidden()
    a.temperature.setValue(1.3)
    b.model.setCurrentIndex(b.model.findData("/models/b"))
    assert a.stale.text() == "These results are for the earlier settings: Run all to update them."
    assert b.stale.text() == "These results are for the earlier model: Run all to update them."
    assert a.tokens.plain_text() == "t1t2t3"  # still shown, greyed
    win.run_all()
    play(bridge, "/models/a", [5], 0)
    play(bridge, "/models/b", [6], 1)
    assert a.stale.isHidden() and b.stale.isHidden()
    assert all(veil.isHidden() for lane in win.lanes for veil in lane.veils)


def test_a_lane_shows_its_models_load_progress(qtbot):
    win, bridge, c = window(qtbot)
    a, b = win.lanes
    c.set_shared_prompt("Q", same=True)
    assert a.load_bar.isHidden()
    win.run_all()
    assert a.status.text() == "loading Model A · Q4_1…"
    assert not a.load_bar.isHidden() and a.load_bar.maximum() == 0  # busy until told
    bridge.progress.emit("Converting Model A to MLX", 0.5)
    assert a.load_note.text() == "Converting Model A to MLX"
    assert (a.load_bar.maximum(), a.load_bar.value()) == (1000, 500)
    assert b.load_bar.isHidden()  # the lane waiting shows nothing of it
    bridge.model_loaded.emit(model("/models/a"))
    assert a.load_bar.isHidden() and a.load_note.isHidden()
