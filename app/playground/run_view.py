"""RunView: the answer, the five charts and the status line, drawing the session's
run on screen.

It subscribes to the session adapter (a run shown, a step selected, a run ended)
and is fed the stream's token batches; charts redraw one per timer tick while
streaming (each at most every STREAM_REFRESH_S: paint is what costs), all at once
when the run or the step changes; the status line at most 4 times a second (a
narrow window drops its other figures before the prompt's share from the cache).
When another run comes on screen every readout starts afresh.
"""

from __future__ import annotations

import time
from html import escape

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

from app.charts.panel import CHARTS
from app.core.appearance import on_theme
from app.core.session_signals import SessionSignals
from app.playground.status_line import status_text
from app.widgets.fitting_label import FittingLabel

STATUS_MS = 250
REDRAW_MS = 33  # one chart per tick while streaming: each chart ~6 Hz, no long paint stalls
STREAM_REFRESH_S = 0.25  # while streaming, each chart refreshes at most 4 times a second


class RunView(QObject):
    def __init__(
        self,
        model: SessionSignals,
        answer,
        charts,
        status_label,
        follow_button,
        viewing_label,
        temperature,
        parent=None,
    ):
        """`temperature() -> float`: the sampling panel's current temperature."""
        super().__init__(parent)
        self.model, self.session = model, model.session
        self.answer, self.charts, self.status_label = answer, charts, status_label
        if isinstance(status_label, FittingLabel):  # a narrow window keeps the cache figure
            status_label.keep_first_detail()  # "TTFT 0.12 s (75 of 76 tokens from cache)"
        self.follow_button, self.viewing_label = follow_button, viewing_label
        self.temperature = temperature
        self.dirty: list[str] = []  # charts waiting for a redraw, oldest first
        self.stale = False  # tokens arrived that the charts do not show yet
        self._last_mark = 0.0
        self.status_timer = QTimer(self)
        self.status_timer.setInterval(STATUS_MS)
        self.status_timer.timeout.connect(self.refresh_status)
        self.redraw_timer = QTimer(self)
        self.redraw_timer.setInterval(REDRAW_MS)
        self.redraw_timer.timeout.connect(self._redraw_if_dirty)
        on_theme(viewing_label, lambda w: self.refresh_line())
        model.shown_changed.connect(self._on_shown)
        model.step_selected.connect(self._on_step_selected)
        model.tokens_added.connect(self._on_tokens)
        model.run_finished.connect(self._on_finished)
        self.status_timer.start()
        self.redraw_timer.start()

    # -- what arrives -------------------------------------------------------------------
    def _on_tokens(self, records) -> None:
        """A batch of the streaming run's tokens (the charts catch up on the timer)."""
        self.answer.append_tokens(records, self.session.shown.tokens)
        self.stale = True

    def _on_shown(self, state) -> None:
        """Another run is on screen: every view starts from it, no readout stays."""
        self.refresh_line()
        self.answer.clear_tokens()
        if state.tokens:
            self.answer.append_tokens(state.tokens)
        self.follow_button.setEnabled(False)
        self.charts.reset_readouts()
        self.redraw()
        self.refresh_status()

    def _on_step_selected(self, step) -> None:
        self.answer.select_step(step)
        self.follow_button.setEnabled(step is not None)
        self.redraw()

    def _on_finished(self, record) -> None:
        self.dirty, self.stale = list(CHARTS), False  # show the (partial) run in full
        self.answer.set_done(record)  # the thinking header's share of the cost
        self.refresh_status()

    # -- drawing ------------------------------------------------------------------------
    def _redraw_if_dirty(self) -> None:
        """Redraw one waiting chart: painting all five at once stalls ~50 ms."""
        now = time.monotonic()
        if self.stale and now - self._last_mark >= STREAM_REFRESH_S:
            self.stale, self._last_mark = False, now
            self.dirty = [c for c in self.dirty if c not in CHARTS] + list(CHARTS)
        if self.dirty:
            self._draw_chart(self.dirty.pop(0))

    def redraw(self) -> None:
        """Redraw every chart now (a run starts or ends, a step is selected)."""
        self.dirty = []
        for name in CHARTS:
            self._draw_chart(name)

    def _draw_chart(self, name: str) -> None:
        self.charts.draw(name, self.session.shown, self.marked_temperature())

    def marked_temperature(self) -> float:
        """The temperature the charts mark: the slider's for the person's own runs (it
        shows what another temperature would do) and for any read (it sampled nothing),
        a guest's own (it ran at that)."""
        shown = self.session.shown
        ran_at = self.session.guest is not None and not shown.reading
        return shown.settings.temperature if ran_at else self.temperature()

    def refresh_line(self) -> None:
        """The line above the answer: where a guest came from, else what the right-sized
        model did on this turn (empty: neither)."""
        shown = self.session.shown
        text = guest_line(self.session.guest) or route_line(shown.route)
        self.viewing_label.setText(text)

    def refresh_status(self) -> None:
        """The status line describes the run on screen, with the model it ran with."""
        text = status_text(self.session.shown, self.session.shown_model)
        if text is not None and self.status_label.text() != text:
            self.status_label.setText(text)

    def cleanup(self) -> None:
        self.status_timer.stop()
        self.redraw_timer.stop()


CONTINUE_LINK, BACK_LINK, PARTNER_LINK = "continue", "back", "partner"


def _link_style() -> str:
    # the theme's link colour, written in: a label keeps the colour it was given at first
    return f"style='color: {QApplication.palette().link().color().name()}'"


def route_line(note) -> str:
    """The line above an answer of the right-sized model (app/session/right_size.py's
    RouteNote; rich text, its link showing the turn's other attempt), or ""."""
    if note is None:
        return ""
    small, large = escape(note.small), escape(note.large)
    reason = escape(note.reason)
    other = note.partner is not None and (note.role == "large" or note.partner.tokens)
    link = f"<a href='{PARTNER_LINK}' {_link_style()}>"
    if note.role == "small":
        if note.escalated:
            see = f" · {link}see {large}'s answer</a>" if other else ""
            return f"<b>Right-sized</b>: {small}'s answer, {reason} to {large}{see}"
        return f"<b>Right-sized</b>: {small} answered · {reason}"
    see = f" · {link}see {small}'s answer</a>"
    if note.failed:
        why = escape(note.failed)
        return f"<b>Right-sized</b>: {large} did not answer ({why}); {small}'s answer stands{see}"
    return f"<b>Right-sized</b>: {large} answered, because {small}'s {reason}{see}"


def guest_line(guest) -> str:
    """The line above a run shown from elsewhere (rich text: its two ways on), or ""."""
    if guest is None:
        return ""
    link = _link_style()
    return (
        f"{escape(guest.line)}. Run goes on with your own conversation · "
        f"<a href='{BACK_LINK}' {link}>Back to your conversation</a> · "
        f"<a href='{CONTINUE_LINK}' {link}>Continue from here</a> (takes its model and settings)"
    )
