"""Issue 37: every view follows the session model's one truth (no real model: runs
are built from records here)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from app.charts.panel import ChartsPanel
from app.core.session_signals import SessionSignals
from app.dialogs.load_settings import LoadSettingsDialog
from app.inside.window import InsideWindow
from app.playground.conversation_flow import FlowUi, TurnFlow
from app.playground.conversation_view import ConversationView, TurnLabel, turn_stats
from app.playground.run_view import RunView
from app.playground.status_line import status_text
from app.session import Answer, Session
from app.session.run_state import RunState
from app.shell.layout import ElidedProgressBar, build_center, show_progress
from engine.machine.hardware_timeline import timeline
from engine.models import model_prefs
from engine.models.load_options import LoadOptions
from engine.run.records import DoneRecord, ModelRecord, TokenRecord
from engine.run.settings import SamplingSettings
from tests.app.conftest import LOAD_MS, RUN_MS
from tests.session.test_session_model import answer

PROMPT = 30


def model(ctx: int = 8192) -> ModelRecord:
    return ModelRecord(
        name="tiny",
        path="/models/tiny",
        architecture="llama",
        quantization="4-bit",
        size_bytes=1,
        context_length=ctx,
        device="CPU",
        load_s=0.0,
    )


def token(step: int) -> TokenRecord:
    t = 0.2 + 0.05 * step + 0.01 * step * step  # slowing down: every step its own rate
    return TokenRecord(
        step, 100 + step, f" w{step}", -0.1, 0.9, -0.1, (), (), 0.5, 0.5, t, 0.05, PROMPT + step
    )


def finished_run(n: int = 8) -> RunState:
    state = RunState(prompt="x", settings=SamplingSettings(max_tokens=n), model=model())
    state.add_tokens([token(i) for i in range(n)])
    state.done = DoneRecord("length", "", PROMPT, n, 0.2, 50.0, 20.0, None, None, 8192, 1, 1.0)
    return state


class _Answer:
    """The token view's part RunView uses."""

    def __init__(self):
        self.selected = None

    def select_step(self, step):
        self.selected = step

    def clear_tokens(self): ...

    def append_tokens(self, *_a): ...

    def set_done(self, _r): ...


def _run_view(qtbot, signals: SessionSignals) -> tuple[RunView, ChartsPanel]:
    charts = ChartsPanel()
    status, follow, viewing = QLabel(), QPushButton(), QLabel()
    for widget in (charts, status, follow, viewing):
        qtbot.addWidget(widget)
    view = RunView(signals, _Answer(), charts, status, follow, viewing, lambda: 0.7)
    return view, charts


def test_selecting_a_step_moves_throughput_and_context(qtbot):
    signals = SessionSignals()
    view, charts = _run_view(qtbot, signals)
    state = finished_run()
    signals.show(state)
    assert not charts.throughput.step_line.isVisible()  # following the latest: no marker
    assert not charts.context.step_mark.isVisible()

    signals.select(2)
    line2 = charts.throughput.step_line.value()
    mark2 = charts.context.step_mark.getData()[0].copy()
    title2 = charts.throughput.getPlotItem().titleLabel.text
    assert line2 == state.tokens[2].elapsed_s
    assert "step 2 at 0.34 s" in title2
    assert "step 2: token position 32 of 8,192" in charts.context.getPlotItem().titleLabel.text

    signals.select(6)
    line6 = charts.throughput.step_line.value()
    mark6 = charts.context.step_mark.getData()[0]
    assert line6 == state.tokens[6].elapsed_s != line2
    assert charts.throughput.step_line.isVisible() and charts.context.step_mark.isVisible()
    zoom = charts.context.zoom
    assert np.allclose(mark2, (32.5 * zoom, 32.5 * zoom))
    assert np.allclose(mark6, (36.5 * zoom, 36.5 * zoom)) and mark6[0] > mark2[0]
    rate = charts.throughput.tps[6]
    assert f"step 6 at {state.tokens[6].elapsed_s:.2f} s: {rate:.1f} tok/s" in (
        charts.throughput.getPlotItem().titleLabel.text
    )
    assert "step 6: token position 36 of 8,192" in charts.context.getPlotItem().titleLabel.text

    signals.select(None)  # follow the latest again: the markers go
    assert not charts.throughput.step_line.isVisible()
    assert not charts.context.step_mark.isVisible()
    view.cleanup()


def _type(qtbot, spin, text: str, enter: bool = True) -> None:
    spin.setFocus()
    spin.selectAll()
    if text:
        qtbot.keyClicks(spin, text)
    else:
        qtbot.keyClick(spin, Qt.Key_Backspace)
    if enter:
        qtbot.keyClick(spin, Qt.Key_Return)


def test_typing_a_context_length_keeps_what_was_typed(qtbot, tmp_path):
    spec = str(tmp_path / "model")
    dialog = LoadSettingsDialog(spec, None)
    qtbot.addWidget(dialog)
    dialog.show()
    spin = dialog.context
    _type(qtbot, spin, "128")
    assert (spin.text(), spin.value()) == ("128", 128)  # was 6284: clamped at each key
    _type(qtbot, spin, "4096")
    assert (spin.text(), spin.value()) == ("4096", 4096)  # was 6094
    assert dialog.error.text() == ""
    _type(qtbot, spin, "")  # cleared: the model's own context, not 64 or the last value
    assert spin.value() == 0 and spin.text() == "the model's (131,072)"
    _type(qtbot, spin, "32")  # below the minimum: said, not rewritten
    assert spin.value() == 32 and "at least 64 tokens" in dialog.error.text()
    _type(qtbot, spin, "256", enter=False)  # typed, then OK at once
    dialog.accept()
    assert model_prefs.load_options(spec) == LoadOptions(256)


def test_a_context_chosen_at_load_is_every_views_context(qtbot, replay_window, default_model_path):
    # default_model_path: the prompt counter reads the model's own tokenizer files
    """Real model: Load… with context 64 reloads the same model; the counter, the model
    line, the run's context chart and the engine's refusal all say 64."""
    path = replay_window.model_record.path
    replay_window.prompt.setPlainText("word " * 70)
    replay_window.controls.seed_lock.setChecked(True)  # the same request as recorded
    model_prefs.set_load_options(path, LoadOptions(64))
    try:
        replay_window.load_model(path)
        qtbot.waitUntil(lambda: replay_window.model_record.context_length == 64, timeout=LOAD_MS)
        qtbot.waitUntil(lambda: replay_window.token_count.text().endswith(" of 64"), timeout=10_000)
        assert "#b00020" in replay_window.token_count.styleSheet()  # over: red
        assert "context 64 ·" in replay_window.picker.info.text()
        replay_window.run()
        qtbot.waitUntil(lambda: replay_window.state.error is not None, timeout=RUN_MS)
        assert "context window is 64" in replay_window.state.error.message
        assert replay_window.state.model.context_length == 64
        assert replay_window.charts.context.counts["context"] == 64
    finally:
        model_prefs.set_load_options(path, LoadOptions())
        qtbot.waitUntil(lambda: not replay_window.bridge.busy, timeout=RUN_MS)
        replay_window.load_model(path)
        qtbot.waitUntil(lambda: replay_window.model_record.context_length > 64, timeout=LOAD_MS)


def branch_done(prompt=78, step=4, cached=82, computed=1) -> DoneRecord:
    """A Sample N future from step 4: the prompt and 4 answer tokens fed, from the cache."""
    prefill_s = 0.05
    return DoneRecord(
        "length", "", prompt, 8, 0.1, computed / prefill_s, 20.0, None, 1 << 20, 8192, 3, 1.0,
        prefill_s=prefill_s, cached_tokens=cached, branch_step=step,
    )  # fmt: skip


def test_a_branch_counts_its_shared_prefix_on_both_sides_of_the_cache():
    done = branch_done()
    state = finished_run()
    state.done, state.branch = done, {"parent": "s/1", "step": 4, "kind": "sample"}
    text = status_text(state, model())
    assert "(82 of 82 tokens from cache, the prompt and 4 answer tokens)" in text  # was 82 of 78
    answer = Answer("hi", state)
    assert "(82 of 82 tokens from cache, the prompt and 4 answer tokens)" in turn_stats(answer)
    plain = dataclasses.replace(done, cached_tokens=70, branch_step=None)
    assert "(70 of 78 tokens from cache)" in status_text(
        dataclasses.replace(state, done=plain), None
    )


def streaming_branch() -> tuple[RunState, list[float]]:
    """A forced branch at step 4, still streaming, as `with_prefix` delivers it: the
    parent's steps 0-3 stamped 0 s, the chosen token at 0.30 s, then a sampled token every
    ~0.15 s (about 6.6 tok/s, slowing a little). Returns it and the sampled steps' times."""
    state = RunState(prompt="x", settings=SamplingSettings(), model=model())
    state.branch = {"parent": "s/1", "step": 4, "kind": "forced"}
    parent = [dataclasses.replace(token(i), elapsed_s=0.0, latency_s=0.0) for i in range(4)]
    chosen = dataclasses.replace(token(4), elapsed_s=0.30, forced=True)
    sampled_s = [0.30 + 0.15 * i + 0.001 * i * i for i in range(1, 13)]
    sampled = [
        dataclasses.replace(token(4 + i), elapsed_s=t, latency_s=0.15)
        for i, t in enumerate(sampled_s, start=1)
    ]
    state.add_tokens(parent + [chosen] + sampled)
    return state, sampled_s


def test_a_branchs_throughput_and_status_count_only_the_tokens_it_generated(qtbot):
    from app.charts.throughput import ThroughputChart

    state, sampled_s = streaming_branch()
    chart = ThroughputChart()
    qtbot.addWidget(chart)
    chart.update_from(state)
    own = [0.30, *sampled_s]  # the chosen token, then the sampled ones: steps 4..16
    np.testing.assert_array_equal(chart.times, own)  # the parent's 0 s steps are not drawn
    # The rolling rate by hand: steps over the last 8 (fewer at the start) / their time.
    want = [float("nan")] + [
        (k - max(k - 8, 0)) / (own[k] - own[max(k - 8, 0)]) for k in range(1, len(own))
    ]
    np.testing.assert_allclose(chart.tps, want, rtol=1e-12)
    assert 6.0 < np.nanmax(chart.tps) < 6.7  # was 13.3: the parent's 4 steps counted from 0 s
    # Decode as the engine's DoneRecord will count it: sampled steps only (the chosen
    # token is not a decode step), 11 steps over the first sampled to the last.
    decode = (len(sampled_s) - 1) / (sampled_s[-1] - sampled_s[0])
    title = chart.getPlotItem().titleLabel.text
    assert decode == pytest.approx(11 / (0.15 * 11 + 0.001 * 143))  # was 16 / 1.993 s
    assert f"decode {decode:.1f} tok/s" in title
    text = status_text(state, model())
    assert f"TTFT {sampled_s[0]:.2f} s · decode {decode:.1f} tok/s" in text
    assert "17 tokens (13 new from step 4)" in text
    state.selected = 2  # a step of the parent's: no time of this run to mark
    chart.update_from(state)
    assert not chart.step_line.isVisible()
    assert "step 2: the parent run's" in chart.getPlotItem().titleLabel.text
    state.selected = 9
    chart.update_from(state)
    assert chart.step_line.value() == state.tokens[9].elapsed_s == own[5]
    assert f"step 9 at {own[5]:.2f} s: {want[5]:.1f} tok/s" in chart.getPlotItem().titleLabel.text


def test_inside_reads_a_branch_runs_prefill_as_the_status_line_does():
    m = dataclasses.replace(model(), parameters=135_000_000, weight_bytes=100_000_000)
    done = branch_done(cached=81, computed=1)  # the forced token computed
    t = timeline(m, finished_run().tokens, done, 78)
    assert t.prefill_tokens == 1 and t.prefill_gflops == pytest.approx(2 * 135e6 * 20 / 1e9)
    assert not any("prefill" in line for line in t.missing)  # was "did not report"
    cached = dataclasses.replace(done, cached_tokens=82, prefill_tps=None)
    assert "all 82 tokens came from the KV cache" in " ".join(
        timeline(m, finished_run().tokens, cached, 78).missing
    )


def test_an_earlier_run_of_turn_1_draws_turn_2_below_it_not_above(qtbot):
    s = Session()
    s.set_model(model())
    answer(s, "Hello", 0, ("Hi",))
    answer(s, "More please", 1, ("Sure",))
    answer(s, "Hello", 0, ("Hey",))  # regenerate turn 1: run 2/2, no turn 2 after it
    s.switch_sibling(0, 0)  # ‹ run 1/2: its turn 2 follows again
    assert [a.user for a in s.conversation.turns] == ["Hello", "More please"]
    transcript, label = ConversationView(), TurnLabel()
    qtbot.addWidget(transcript)
    qtbot.addWidget(label)
    transcript.show_conversation(s.conversation, s.shown_turn)
    label.show_turn(s.conversation, s.shown_turn)
    assert "More please" not in transcript.toPlainText()  # was drawn above turn 1
    assert "Turn 1" in label.text() and "turn 2 follows" in label.text()
    assert "href='show:1'" in label.text()
    transcript.show_conversation(s.conversation, 1)  # turn 2 shown: turn 1 above it
    assert "Hello" in transcript.toPlainText() and "More please" not in transcript.toPlainText()


def test_inside_journeys_next_step_moves_the_playground_too(qtbot):
    signals = SessionSignals()
    view, charts = _run_view(qtbot, signals)
    state = finished_run()
    signals.show(state)
    signals.select(5)
    inside = InsideWindow(signals)
    qtbot.addWidget(inside)
    inside.show()
    inside.follow(state, 5)
    heard = []
    signals.step_selected.connect(heard.append)
    inside.journey.step_requested.emit(6)  # ▸ Next step
    assert heard == [6] and state.selected == 6  # the session's cursor, not a copy
    assert inside.step == 6
    assert charts.throughput.step_line.value() == state.tokens[6].elapsed_s  # the playground
    inside.close()
    view.cleanup()


def test_the_status_line_and_banner_say_it_in_words():
    state = finished_run()
    text = status_text(state, model())
    assert text.endswith("· stopped at max tokens") or "· stopped at max tokens ·" in text
    assert "· length" not in text  # was the bare finish reason
    said = []
    panel = type("Panel", (), {"prompt": None})()
    ui = FlowUi(lambda m, links=False: said.append(m), *[lambda *a: None] * 4, lambda: False)
    TurnFlow(SessionSignals(), None, None, panel, ui).ask_about_context(200, 64, ("x", 1, 0, 1))
    assert "(View ▸ Settings and history panel)" in said[0]  # the menu's own words


def test_the_count_wraps_and_the_load_bar_never_cuts_a_name(qtbot):
    panel = SimpleNamespace(token_count=QLabel(), show_tokens=QPushButton(), stack=QWidget())
    center = build_center(panel)
    qtbot.addWidget(center.widget)
    center.widget.resize(420, 600)
    center.widget.show()
    count = panel.token_count
    count.setText("12 tokens · turn 3: 118 of 8,192")
    qtbot.waitUntil(lambda: count.width() > 0)
    assert count.wordWrap()  # was cut to "turn 3: 118 of 8,19" in a narrow window
    bar = ElidedProgressBar()
    qtbot.addWidget(bar)
    bar.setFixedWidth(260)
    show_progress(bar, "Loading SmolLM2-135M-Instruct (4-bit, 98 MB)…", 0.95)
    assert bar.text() == "95%" and "…" not in bar.text()  # was "Loading Sm…"
    assert bar.toolTip() == "Loading SmolLM2-135M-Instruct (4-bit, 98 MB)…"
