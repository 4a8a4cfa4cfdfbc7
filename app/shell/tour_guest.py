"""The tour is a guest (app/session/guest.py says the rule): while its panel is open, its
lessons run in a workspace and a History session of their own ("Tour"); closing it puts
back the person's settings, mode, prompt, conversation and model exactly as they were.

`TourGuest.enter()` sets the person's playground aside (the session's whole workspace,
the sampling panel's every value, the Right-sized button, the prompt box's text, the
loaded model);
`TourGuest.leave()` puts it back, after stopping a lesson's run still going. Windows a
lesson opens (Inside, the Lab) are placed beside the tour's panel, never over it
(`place_beside`).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPoint, QRect

from engine.run.settings import SamplingSettings

TOUR_SESSION = "Tour"  # History's name for the tour's session
GAP = 8  # px between the tour's panel and a window beside it


@dataclass
class _Aside:
    session: object  # app.session.guest.SetAside
    controls: object  # app.widgets.controls.ControlsState
    prompt: str
    model_path: str | None
    side_visible: bool
    right_size: tuple  # (RightSizing, on): the Right-sized button beside the model picker


class TourGuest:
    """The person's playground, set aside while the tour is open (`window`: the
    PlaygroundWindow)."""

    def __init__(self, window):
        self.w = window
        self.aside: _Aside | None = None
        self._pending = False  # enter() or leave() waits for a run to stop
        self.wanted = False  # the tour is open: the playground is (or is about to be) aside

    @property
    def active(self) -> bool:
        return self.aside is not None

    @property
    def model_path(self) -> str | None:
        """The person's model while the tour is open (None: the tour is closed)."""
        return self.aside.model_path if self.aside is not None else None

    def enter(self) -> None:
        """Set the person's playground aside (once; a second call does nothing)."""
        self.wanted = True
        if self.aside is not None:
            return
        w = self.w
        if w.bridge.busy:  # their own run ends first (kept whole), then the tour comes in
            w.bridge.cancel()
            if not self._pending:
                self._pending = True
                w.bridge.busy_changed.connect(self._after_own_run)
            return
        rec = w.model_record
        self.aside = _Aside(
            w.session.set_aside(TOUR_SESSION),
            w.controls.snapshot(),
            w.prompt.toPlainText(),
            rec.path if rec is not None else None,
            w.side_visible,
            w.right_size.snapshot(),
        )
        w.right_size.hold(True)  # what a lesson sets is not remembered as the person's
        w.right_size.set(w.right_size.settings, False)  # lessons: answered by one model
        w.hide_error()
        w.controls.apply(SamplingSettings(), seed_locked=True)  # lessons: defaults, then theirs

    def leave(self, load_model: bool = True) -> None:
        """Put the person's playground back; a lesson's run still going is stopped
        first. `load_model`: load their model again if the tour switched it (not when
        the window is closing)."""
        self.wanted = False
        if self.aside is None:
            return
        w = self.w
        if w.bridge.busy and load_model:
            w.bridge.cancel()
            if not self._pending:
                self._pending = True
                w.bridge.busy_changed.connect(self._after_run)
            return
        aside, self.aside = self.aside, None
        w.hide_error()
        w.session.bring_back(aside.session)
        w.controls.put_back(aside.controls)
        w.prompt.setPlainText(aside.prompt)
        w.toggle_side_panel(aside.side_visible)
        w.right_size.hold(False)
        w.right_size.set(*aside.right_size)
        rec = w.model_record
        if load_model and aside.model_path and (rec is None or rec.path != aside.model_path):
            w.load_model(aside.model_path)

    def _after_own_run(self, busy: bool) -> None:
        if busy:
            return
        self.w.bridge.busy_changed.disconnect(self._after_own_run)
        self._pending = False
        if self.wanted:  # the tour may have been closed meanwhile
            self.enter()

    def _after_run(self, busy: bool) -> None:
        if busy:
            return
        self.w.bridge.busy_changed.disconnect(self._after_run)
        self._pending = False
        if not self.wanted:  # the tour may have been opened again meanwhile
            self.leave()


def global_rect(widget) -> QRect:
    """`widget`'s rectangle in screen coordinates."""
    return QRect(widget.mapToGlobal(QPoint(0, 0)), widget.size())


def place_beside(window, panel) -> None:
    """Move and size `window` (a top-level window a lesson opened) so that it lies
    beside the tour's `panel` on the panel's screen, never over it: to its left when
    there is room, else to its right, else in the wider of the two sides."""
    screen = panel.screen().availableGeometry() if panel.screen() else None
    if screen is None or not panel.isVisible():
        return
    p = global_rect(panel)
    frame = window.frameGeometry().size() - window.size()  # title bar and borders
    left = QRect(screen.left(), screen.top(), p.left() - GAP - screen.left(), screen.height())
    right_x = p.right() + GAP + 1
    right = QRect(right_x, screen.top(), screen.right() - right_x + 1, screen.height())
    room = left if left.width() >= right.width() else right
    width = max(1, min(window.width(), room.width() - frame.width()))
    height = max(1, min(window.height(), room.height() - frame.height()))
    window.resize(width, height)
    x = room.right() + 1 - width - frame.width() if room is left else room.left()
    window.move(max(room.left(), x), room.top())
