"""What is shown from elsewhere never becomes yours (issue 54, app/session/guest.py):
a followed request, a read reopened from History, each is shown read-only under a line
saying where it came from, with its own settings; the next Run continues the person's
own conversation, with the person's settings; Continue from here is the one way in."""

from __future__ import annotations

import queue

import pytest
from PySide6.QtWidgets import QApplication

from app.core.bridge import EngineBridge
from app.session.run_state import RunState
from app.shell.window import PlaygroundWindow
from engine.run.records import SWEEP_TEMPERATURES, DoneRecord, TokenRecord, TopToken
from engine.run.settings import SamplingSettings
from tests.app.conftest import run_and_wait
from tests.replay import ReplayClient


@pytest.fixture
def playground(qtbot):
    win = PlaygroundWindow(
        bridge=EngineBridge(client=ReplayClient(None), owns_client=False), load_on_start=False
    )
    qtbot.addWidget(win)
    win.show()
    yield win
    win.cleanup()


def _token(step: int, text: str) -> TokenRecord:
    """A token with two candidates and a temperature sweep (what the charts need)."""
    import math

    top = (TopToken(7, text, math.log(0.7)), TopToken(8, "x", math.log(0.3)))
    logz = tuple(
        math.log(0.7 ** (1 / t) + 0.3 ** (1 / t)) if t > 0 else math.log(0.7)
        for t in SWEEP_TEMPERATURES
    )
    return TokenRecord(
        step, 7, text, math.log(0.7), 0.7, math.log(0.7), top, top, 0.61, 0.61,
        0.1 * (step + 1), 0.1, 9 + step, logz, tuple(0.5 for _ in SWEEP_TEMPERATURES),
    )  # fmt: skip


def _done(text: str, n: int) -> DoneRecord:
    return DoneRecord("length", text, 5, n, 0.1, 50.0, 9.0, None, None, 8192, None, 1.0)


def _followed(window, settings: dict, prompt) -> None:
    """Feed one request the server answered into the window's follower."""
    from engine.run.records import to_dict

    following = window.serving.following

    class Reader:
        queue = queue.Queue()

        def close(self):
            pass

    reader = Reader()
    client = {"address": "10.0.0.2:5000", "user_agent": "curl/8"}
    events = [
        {"kind": "started", "request_id": "r", "run_id": "srv/1", "prompt": prompt,
         "settings": settings, "client": client, "model": None},
        {"kind": "record", "request_id": "r", "run_id": "srv/1",
         "record": to_dict(_token(0, "Yes"))},
        {"kind": "record", "request_id": "r", "run_id": "srv/1",
         "record": to_dict(_done("Yes", 1))},
    ]  # fmt: skip
    for e in events:
        reader.queue.put(("event", e))
    following.reader = reader
    following.drain()
    following.reader = None


def test_a_followed_request_is_drawn_in_its_own_lane_with_its_own_settings(qtbot, playground):
    window = playground
    window.controls.temp_spin.setValue(0.3)
    mine = RunState(prompt="Mine", settings=SamplingSettings(temperature=0.3))
    window.model.begin("Mine", 0, mine)
    window.model.add_tokens([_token(0, "Sure")])
    window.model.finish(_done("Sure", 1))
    window.model.run_ended()
    assert window.session.shown_turn == 0

    theirs = [{"role": "user", "content": "Earlier"}, {"role": "assistant", "content": "Ok"},
              {"role": "user", "content": "Theirs"}]  # fmt: skip
    _followed(window, {"temperature": 1.0, "max_tokens": 2}, theirs)
    shown, guest = window.state, window.session.guest
    assert shown.prompt == "Theirs" and shown.settings.temperature == 1.0
    assert guest.source == "Server" and guest.line.startswith("Request from 10.0.0.2:5000")
    assert "Continue from here" in window.viewing_label.text()
    # Every chart says the request's T = 1, not the slider's 0.3, even when the slider moves.
    qtbot.waitUntil(lambda: not window._dirty, timeout=5_000)
    assert window.temp_chart.temp == 1.0 and window.temp_chart.t_line.value() == 1.0
    window.controls.temp_spin.setValue(0.5)
    assert window.temp_chart.temp == 1.0
    # Not under the person's conversation: the transcript holds the request's own turns.
    text = window.transcript.toPlainText()
    assert "Earlier" in text and "Mine" not in text
    assert [t.user for t in window.session.own_conversation.turns] == ["Mine"]
    assert not window.regen_button.isEnabled()  # a guest's turns are not the person's to rerun
    # Back to your conversation: the person's run, and the slider's temperature, come back.
    window._on_guest_link("back")
    assert window.state is mine and window.session.guest is None
    assert window.viewing_label.text() == "" and window.temp_chart.temp == 0.5
    assert [t.user for t in window.conversation.turns] == ["Mine"]


def test_a_reopened_read_stays_a_read_and_run_continues_your_conversation(qtbot, window):
    from tests.app.test_read_mode import read_and_wait

    read = read_and_wait(qtbot, window, "Rain falls on the hills.")
    window.new_conversation()
    window.controls.set_reading(False)
    first = run_and_wait(qtbot, window, "Say hi.", max_tokens=3)
    history = window.session.history
    history.refresh()
    _session, run = history.find_run(read.run_id)
    window.show_run(run)
    assert window.state.reading and window.session.guest.source == "History"
    assert window.session.shown_turn is None and len(window.conversation) == 0  # no chat turn
    assert "A read from History" in window.viewing_label.text()

    window.prompt.setPlainText("Say bye.")
    window.run()
    ended = lambda: window.state.done is not None and not window.bridge.busy  # noqa: E731
    qtbot.waitUntil(ended, timeout=60_000)
    state = window.state
    assert window.session.guest is None and not state.reading
    assert [t.user for t in window.conversation.turns] == ["Say hi.", "Say bye."]
    assert window.conversation.turns[0].state is first
    want = [
        {"role": "user", "content": "Say hi."},
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Say bye."},
    ]
    assert state.sent == want  # the context holds only the person's own conversation
    tok = window.prompt_panel.tokenizer
    ids = tok.encode(
        tok.apply_chat_template(want, tokenize=False, add_generation_prompt=True),
        add_special_tokens=False,
    )
    assert state.done.prompt_tokens == len(ids)
    assert state.earlier == window.conversation.earlier_spans(1)
    assert state.model.path == window.model_record.path


def test_rank_shading_is_a_reading_setting_and_never_greys_a_chat_answer(qtbot, playground):
    window, bar = playground, playground.shading
    read = RunState(prompt="Rain.", settings=SamplingSettings(chat_template=False), reading=True)
    window.model.view(read, "History", "A read from History")
    assert bar.by_rank.isVisibleTo(window) and bar.reading
    bar.by_rank.setChecked(True)
    assert window.output.shading == "rank" and bar.rank_legend.isVisibleTo(window)
    window._on_guest_link("back")  # the person's own (chat) playground: probability shading
    assert window.output.shading == "prob" and not bar.by_rank.isVisibleTo(window)
    assert bar.prob_legend.isVisibleTo(window) and not bar.rank_legend.isVisibleTo(window)
    assert bar.by_rank.isChecked()  # remembered for the next read
    window.model.view(read, "History", "A read from History")
    assert window.output.shading == "rank"
    bar.by_rank.setChecked(False)


def test_the_guest_lines_links_follow_the_theme(qtbot, playground, restore_palette):
    from app.core import appearance

    window = playground
    appearance.apply_theme("light")
    window.model.view(RunState(prompt="x"), "History", "A run from History")
    light = QApplication.palette().link().color().name()
    assert f"color: {light}" in window.viewing_label.text()
    appearance.apply_theme("dark")
    dark = QApplication.palette().link().color().name()
    assert dark != light and f"color: {dark}" in window.viewing_label.text()
    appearance.apply_theme("light")


def test_a_reopened_read_marks_the_sliders_temperature_it_sampled_nothing(qtbot, playground):
    window = playground
    window.controls.temp_spin.setValue(0.8)
    read = RunState(prompt="Rain.", settings=SamplingSettings(temperature=0.0), reading=True)
    read.add_tokens([_token(0, "Rain")])
    window.model.view(read, "History", "A read from History")
    qtbot.waitUntil(lambda: not window._dirty, timeout=5_000)
    assert window.temp_chart.temp == 0.8
