"""The tour is a guest (issue 54, app/shell/tour_guest.py): its lessons run in one
History session of their own ("Tour"), and closing it puts the person's settings, mode,
prompt, conversation and model back exactly as they were; a window a lesson opens lies
beside the tour's panel, never over it."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from app.session.right_size import RightSizing
from app.shell.tour_guest import global_rect, place_beside
from app.tour.lessons import LESSONS
from app.widgets.controls import CHAT_MODE
from engine.sessions.journal import read_session
from tests.app.conftest import RUN_MS, run_and_wait

LESSON_MS = 4 * RUN_MS


def _index(key: str) -> int:
    return next(i for i, x in enumerate(LESSONS) if x.key == key)


def test_closing_the_tour_puts_back_everything_it_set_aside(qtbot, window):
    c = window.controls
    c.mode.setCurrentIndex(CHAT_MODE)
    c.system.setPlainText("Be brief.")
    mine = run_and_wait(qtbot, window, "Say hi.", temperature=0.9, max_tokens=3, seed=11)
    c.seed_lock.setChecked(False)
    c.top_k.setValue(17)
    window.prompt.setPlainText("My draft, not sent")
    sizing = RightSizing("/a/larger/model", "mean_prob", 0.4)
    window.right_size.set(sizing, True)
    before = c.snapshot()
    conversation, journal = window.conversation, window.journal
    turns = [(t.user, t.answer) for t in conversation.turns]
    model = window.model_record.path

    tour = window.tour
    panel = tour.open(_index("sampling"))
    assert window.session.guest is None and window.conversation is not conversation
    assert window.right_size.sizing() is None  # lessons are answered by one model
    ran = []
    for key in ("sampling", "iteration"):  # two lessons, one History session of the tour's
        panel.show_lesson(_index(key))
        with qtbot.waitSignal(panel.finished, timeout=LESSON_MS) as got:
            panel.show_me.click()
        assert "failed" not in got.args[1], got.args[2].text
        ran.append(got.args[1]["run"])
        qtbot.waitUntil(lambda: not window.bridge.busy, timeout=RUN_MS)
    tour_journal = window.journal
    assert tour_journal is not journal and ran[0].settings.temperature != 0.9
    assert ran[0].settings.top_k != 17 and not ran[0].settings.system_prompt  # not theirs
    assert c.snapshot() != before  # the lessons did set their own temperature and length

    panel.close()
    # Field by field, as before the tour.
    assert c.snapshot() == before and c.mode.currentIndex() == CHAT_MODE
    assert c.top_k.value() == 17 and not c.seed_lock.isChecked()
    assert c.system.toPlainText() == "Be brief."
    assert window.prompt.toPlainText() == "My draft, not sent"
    assert window.right_size.sizing() == sizing
    window.right_size.set(sizing, False)  # the next Run below: one model
    assert window.conversation is conversation
    assert [(t.user, t.answer) for t in window.conversation.turns] == turns
    assert window.state is mine and window.journal is journal
    assert window.model_record.path == model and window.session.journal_title is None
    # The tour's runs are in one session called Tour; the person's session has none of them.
    log = read_session(tour_journal.path)
    assert log.title == "Tour"
    assert [r.run_id for r in log.visible_runs] == [s.run_id for s in ran]
    assert all(r.run_id not in {s.run_id for s in ran} for r in read_session(journal.path).runs)
    window.session.history.refresh()
    assert any(s.title == "Tour" for s in window.session.history.sessions)
    # The next Run continues the person's conversation, with their settings.
    window.prompt.setPlainText("Say bye.")
    c.seed_lock.setChecked(True)
    window.run()
    qtbot.waitUntil(
        lambda: window.state.done is not None and not window.bridge.busy, timeout=RUN_MS
    )
    assert [t.user for t in window.conversation.turns] == ["Say hi.", "Say bye."]
    assert window.state.settings.top_k == 17 and window.state.settings.max_tokens == 3


def test_a_window_a_lesson_opens_lies_beside_the_panel(qtbot, window):
    panel = window.tour.open(0)
    qtbot.waitExposed(panel)
    other = QWidget()
    qtbot.addWidget(other)
    other.resize(2000, 1200)  # wider than the room beside the panel
    other.show()
    place_beside(other, panel)
    assert not other.frameGeometry().intersects(global_rect(panel))
    assert other.width() >= 1 and other.height() >= 1
    panel.close()


def test_opening_the_tour_during_a_run_stops_it_and_keeps_it_yours(qtbot, window):
    from tests.app.conftest import start_run

    start_run(window, "Tell me a long story about the sea.", max_tokens=200)
    qtbot.waitUntil(lambda: window.state.n > 0, timeout=RUN_MS)
    mine = window.state
    window.tour.open(0)
    qtbot.waitUntil(lambda: window.tour.guest.active, timeout=RUN_MS)  # after the run ends
    assert mine.done is not None and mine.done.finish_reason == "cancelled"
    assert window.state is not mine and window.state.n == 0  # none of it in the tour's view
    assert window.session.journal_title == "Tour"
    window.tour.panel.close()
    assert window.state is mine and window.conversation.turns[0].state is mine
    assert not window.tour.guest.active and window.session.journal_title is None


def test_the_panel_keeps_one_width_and_the_frame_goes_with_the_tour(qtbot, window):
    from app.tour.panel import PANEL_WIDTH

    panel = window.tour.open(0)
    qtbot.waitExposed(panel)
    widths = set()
    for text in ("Short.", "A much longer sentence " * 12):
        panel.sentence.setText(text)
        panel.sentence.show()
        qtbot.wait(20)
        widths.add(panel.width())
    assert widths == {PANEL_WIDTH}  # what lies beside it stays beside it
    host = window.tour.host
    host.highlight("playground.temperature")
    frame = host.highlighter.frame
    assert frame.target is window.temp_chart and frame.parentWidget() is not window.temp_chart
    assert frame.geometry().contains(window.temp_chart.geometry())  # around it, not over it
    panel.close()
    assert host.highlighter.frame is None  # nothing of the tour outlives it
