"""Compare, Inside and the lab fit the screen they open on, remember their own
geometry, and every control of an open lane is reachable by mouse and keyboard."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtTest import QTest

from app.compare.window import CompareWindow
from app.core import settings_store
from app.core.window_fit import SCREEN_SHARE, place
from app.inside.window import InsideWindow
from app.lab.window import LabWindow

SMALL, LAPTOP, LARGE = QRect(0, 0, 1024, 700), QRect(0, 0, 1440, 900), QRect(0, 0, 2560, 1440)
WINDOWS = (
    (CompareWindow, "compare", (1500, 950)),
    (InsideWindow, "inside", (1200, 800)),
    (lambda: LabWindow(None), "lab", (1200, 760)),
)


def make(qtbot, factory):
    win = factory()
    qtbot.addWidget(win)
    return win


def settle(qtbot):
    qtbot.wait(30)


@pytest.mark.parametrize(("factory", "key", "default"), WINDOWS, ids=[w[1] for w in WINDOWS])
def test_windows_fit_the_screen_and_remember_their_geometry(qtbot, factory, key, default):
    store = settings_store.store()
    store.remove(f"windows/{key}")
    store.sync()
    for area in (SMALL, LAPTOP, LARGE):
        win = make(qtbot, factory)
        assert not place(win, key, default, area)  # nothing remembered yet
        want_w = min(default[0], int(area.width() * SCREEN_SHARE))
        want_h = min(default[1], int(area.height() * SCREEN_SHARE))
        assert (win.width(), win.height()) == (want_w, want_h)
        assert area.contains(QRect(win.pos(), win.size()))
        hint = win.minimumSizeHint()  # usable at this size: nothing forced off-screen
        assert hint.width() <= want_w and hint.height() <= want_h, (key, hint)
        win.close()
    # Moved and resized by the user: the next window opens there, on the same screen...
    win = make(qtbot, factory)
    place(win, key, default, LARGE)
    win.show()
    win.setGeometry(40, 30, 700, 500)
    settle(qtbot)
    left = win.size()  # Compare keeps its minimum width (it needs 896 px)
    assert left.height() == 500 and left.width() == max(700, win.minimumSizeHint().width())
    win.close()
    again = make(qtbot, factory)
    assert place(again, key, default, LARGE)
    screen = again.screen().availableGeometry().width()  # Qt keeps it on the real screen
    assert again.height() == 500
    assert min(left.width(), screen) - 4 <= again.width() <= min(left.width(), screen)
    # ...and shrunk into a smaller screen's available area.
    small = make(qtbot, factory)
    assert place(small, key, default, QRect(0, 0, 640, 420))
    assert small.width() <= 640 and small.height() <= 420
    for w in (again, small):
        w.close()
    store.remove(f"windows/{key}")  # later tests open their windows at the fitted size
    store.sync()


def _hit(win, widget) -> bool:
    """The widget is what a mouse click at its centre would reach (not covered, not
    scrolled out of sight, not clipped)."""
    centre = widget.mapTo(win, QPoint(widget.width() // 2, widget.height() // 2))
    found = win.childAt(centre)
    return found is not None and (found is widget or widget.isAncestorOf(found))


def _controls(lane):
    s = lane.sampling
    return [
        s.temp_slider,
        s.temp_spin,
        s.top_p,
        s.top_k,
        s.min_p,
        s.rep,
        s.max_tokens,
        s.seed,
        s.stops,
        s.mode,
        s.system,
    ]


@pytest.mark.parametrize(
    ("lanes", "size"), [(2, (1024, 700)), (3, (1024, 700)), (3, (1600, 1000)), (4, (1024, 700))]
)
def test_every_lane_setting_is_reachable_by_mouse_and_keyboard(qtbot, lanes, size):
    win = make(qtbot, CompareWindow)
    win.set_lane_count(lanes)
    win.show()
    win.resize(*size)
    for lane in win.lanes:
        lane.more.setChecked(True)
    settle(qtbot)
    assert _hit(win, win.run_button) and _hit(win, win.stop_button)
    assert not win.lanes[1].visibleRegion().isEmpty()  # lane B is on screen from the start
    for lane in win.lanes:
        parts = [lane.prompt, lane.model, lane.more, lane.sampling, lane.tokens, lane.strip]
        rects = [QRect(p.mapTo(lane, QPoint(0, 0)), p.size()) for p in parts]
        for i, a in enumerate(rects):  # laid out one under another, never over each other
            assert lane.rect().contains(a), parts[i]
            for b in rects[i + 1 :]:
                assert not a.intersects(b), (parts[i], a, b)
        for control in _controls(lane):  # the mouse: scroll there, then it is clickable
            win.lane_scroll.ensureWidgetVisible(control)
            settle(qtbot)
            assert _hit(win, control), (lanes, size, lane.index, control)
    # The keyboard: Tab from lane A's prompt walks through every setting of every lane,
    # each one scrolled into view as it gets the focus.
    win.lanes[0].prompt.setFocus()
    wanted = {id(c): c for lane in win.lanes for c in _controls(lane)}
    seen = set()
    for _ in range(16 * lanes + 10):
        QTest.keyClick(win.focusWidget(), Qt.Key_Tab)
        focus = win.focusWidget()
        for key, control in wanted.items():
            if control is focus or control.isAncestorOf(focus):
                assert _hit(win, control), control
                seen.add(key)
    assert seen == set(wanted)
    win.close()
