"""CompareLane: the view of one lane of a Comparison (app/session/comparison.py): its
prompt, model and sampling settings, its streamed tokens (shaded by probability) and a
probability/entropy strip. It holds nothing of its own: it draws the model's lane, and
a person's edits in its widgets call the model's methods (the lane then redraws from
the announcement; `_drawing` keeps its own redraw from echoing back).

Results whose prompt, settings or model the person changed since are greyed under a
line that says so, until the lane runs again; while its model loads, the lane shows
the engine's progress (the window passes it on: `show_load`)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import pen, scroll_not_zoom, track
from app.core.appearance import themed_style
from app.core.theme import ENTROPY, RAW, note_color
from app.session.comparison import MAX_LANES, Comparison, Lane, lane_name
from app.widgets.controls import SamplingPanel
from app.widgets.model_picker import fill_models
from app.widgets.progress_bar import show_progress
from app.widgets.token_view import TokenView
from engine.run.settings import SamplingSettings

LANE_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2")
assert len(LANE_COLORS) == MAX_LANES  # one colour per lane
# The settings the sampling panel edits (the others stay as the lane's settings hold them).
PANEL_FIELDS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "max_tokens",
    "seed",
    "stop",
    "system_prompt",
    "chat_template",
)
STALE_VEIL_ALPHA = 150  # of 255: how far stale results fade into the window's colour
LOAD_BAR_WIDTH = 160  # px: the loading bar beside the engine's words


def stale_text(changed: list[str]) -> str:
    """The line over results made before the lane's `changed` parts were edited."""
    what = " and ".join([", ".join(changed[:-1]), changed[-1]] if len(changed) > 1 else changed)
    return f"These results are for the earlier {what}: Run all to update them."


def settings_summary(s: SamplingSettings) -> str:
    """The one line a folded lane shows of its settings."""
    extra = [
        f"{k} {v}"
        for k, v, off in (
            ("top-k", s.top_k, 0),
            ("min-p", s.min_p, 0.0),
            ("penalty", s.repetition_penalty, 1.0),
        )
        if v != off
    ]
    if s.system_prompt:
        extra.append("system")
    if not s.chat_template:
        extra.append("raw")
    return (
        f"T {s.temperature:.2f} · top-p {s.top_p:.2f} · seed {s.seed} · "
        f"max {s.max_tokens}" + "".join(f" · {e}" for e in extra)
    )


def read_summary(s: SamplingSettings) -> str:
    """The one line a folded reading lane shows (sampling does not apply to a read)."""
    return "Read a text" + (" · after a context" if s.system_prompt else "")


class Veil(QWidget):
    """A layer of the window's colour over `target`, half see-through: what it shows is
    greyed; clicks and the wheel go through to it. Hidden until `show()`."""

    def __init__(self, target: QWidget):
        super().__init__(target)
        self.setAttribute(Qt.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WA_NoSystemBackground)
        target.installEventFilter(self)
        self.hide()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.setGeometry(self.parentWidget().rect())
        self.raise_()  # over the target's own children (a scroll area's viewport)
        super().showEvent(event)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Resize:
            self.setGeometry(watched.rect())
        return False

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        color = self.palette().color(QPalette.Window)
        color.setAlpha(STALE_VEIL_ALPHA)
        QPainter(self).fillRect(self.rect(), color)


class CompareLane(QFrame):
    stop_requested = Signal(int)  # this lane's index

    def __init__(self, comparison: Comparison, index: int, parent=None):
        super().__init__(parent)
        self.comparison, self.index = comparison, index
        self.color = LANE_COLORS[index % len(LANE_COLORS)]
        self._drawing = False
        self._drawn_state = None  # the RunState the token view shows
        self._drawn_divergence: int | None = None
        self._drawn_n = -1  # tokens the strip shows
        self._ran_model: str | None = None  # the model spec the lane had for its run
        self.setFrameShape(QFrame.StyledPanel)
        self.base_height = 0
        self._build()
        fill_models(self.model)  # the same list as the window's picker, servers included
        if self.lane.model_path is None and not self.lane.model_name and self.model.count():
            self._on_model(self.model.currentIndex())  # the picker's first choice
        self._connect()
        self._fill_copy_from()
        self.draw()

    def _build(self) -> None:
        title = QLabel(f"<b style='color:{self.color}'>Lane {lane_name(self.index)}</b>")
        self.status = QLabel("idle")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop this lane (a queued lane is skipped)")
        self.copy_from = QComboBox()
        self.copy_from.setToolTip("Copy another lane's prompt and settings into this one")
        head = QHBoxLayout()
        for w in (title, self.status):
            head.addWidget(w)
        head.addStretch(1)
        head.addWidget(self.copy_from)
        head.addWidget(self.stop_button)
        self.prompt = QPlainTextEdit()
        self.prompt.setPlaceholderText("This lane's prompt")
        self.prompt.setTabChangesFocus(True)  # Tab walks on to the lane's settings
        self.prompt.setFixedHeight(54)
        self.model = QComboBox()
        self.model.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.model.setMinimumContentsLength(12)
        # The window's own sampling panel (every setting, system prompt and mode included),
        # folded under a one-line summary so four lanes fit side by side.
        self.sampling = SamplingPanel()
        self.sampling.seed_lock.setChecked(True)  # a lane's seed is always its own
        self.sampling.seed_lock.hide()
        self.sampling.setMinimumHeight(self.sampling.sizeHint().height())  # never squashed
        self.sampling.hide()
        self.temperature, self.top_p = self.sampling.temp_spin, self.sampling.top_p
        self.seed, self.max_tokens = self.sampling.seed, self.sampling.max_tokens
        self.more = QToolButton()
        self.more.setCheckable(True)
        self.more.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.more.setArrowType(Qt.RightArrow)
        self.more.setToolTip("Show or hide this lane's sampling settings")
        form = QFormLayout()
        form.addRow("Model", self.model)
        form.addRow(self.more)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #8a1c1c; background: #fde2e1; padding: 4px;")
        self.error.hide()
        self.stale = QLabel()
        self.stale.setWordWrap(True)
        themed_style(self.stale, lambda: f"color: {note_color()}; font-style: italic;")
        self.stale.hide()
        self.load_bar = QProgressBar()
        self.load_bar.setMaximumWidth(LOAD_BAR_WIDTH)
        self.load_note = QLabel()  # the engine's words: downloading, converting, loading
        self.load_note.setWordWrap(True)
        load = QHBoxLayout()
        load.addWidget(self.load_bar)
        load.addWidget(self.load_note, 1)
        self.tokens = TokenView()
        self.strip = pg.PlotWidget()
        self.strip.setFixedHeight(90)
        self.strip.setMenuEnabled(False)
        self.strip.setMouseEnabled(x=False, y=False)
        scroll_not_zoom(self.strip)  # the wheel over it, its axes too, scrolls the lanes
        self.strip.setYRange(0, 1.02, padding=0)
        self.strip.getAxis("left").setWidth(28)
        track(self.strip.getPlotItem())  # the theme's background and axes
        self.prob_curve = self.strip.plot(pen=pen(RAW, 1))
        self.entropy_curve = self.strip.plot(pen=pen(ENTROPY, 1))  # scaled to 0..1
        self.div_line = pg.InfiniteLine(angle=90, pen=pen("#e45756", 1))
        self.div_line.hide()
        self.strip.addItem(self.div_line)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.prompt)
        layout.addLayout(form)
        layout.addWidget(self.sampling)
        layout.addWidget(self.error)
        layout.addLayout(load)
        layout.addWidget(self.stale)
        layout.addWidget(self.tokens, 1)
        layout.addWidget(
            QLabel("<small>p(chosen) — entropy (scaled) — red: divergence or selection</small>")
        )
        layout.addWidget(self.strip)
        self.veils = (Veil(self.tokens), Veil(self.strip))  # over stale results
        self._show_loading(False)

    def _connect(self) -> None:
        self.more.toggled.connect(self._toggle_sampling)
        self.stop_button.clicked.connect(lambda: self.stop_requested.emit(self.index))
        # A person's edits: each one a method of the model.
        self.prompt.textChanged.connect(self._on_prompt)
        self.model.currentIndexChanged.connect(self._on_model)
        self.sampling.changed.connect(self._on_settings)
        self.copy_from.activated.connect(self._on_copy)
        self.tokens.step_clicked.connect(lambda step: self.comparison.select_step(self.index, step))
        # What the model announces.
        events = self.comparison.events
        self._subscriptions = (
            (events.lane_changed, self._on_lane_changed),
            (events.prompt_changed, self._on_prompt_changed),
            (events.tokens_added, self._on_tokens),
            (events.lanes_changed, self._on_lanes_changed),
        )
        for signal, slot in self._subscriptions:
            signal.connect(slot)

    def cleanup(self) -> None:
        """Stop following the model (the lane is removed or its window closed)."""
        for signal, slot in self._subscriptions:
            signal.disconnect(slot)

    # -- the model's lane -------------------------------------------------------------------
    @property
    def lane(self) -> Lane:
        return self.comparison.lanes[self.index]

    @property
    def state(self):
        """The run the lane shows (the model's)."""
        return self.lane.state

    def model_path(self) -> str | None:
        return self.lane.model_path

    # -- a person's edits -------------------------------------------------------------------
    def _on_prompt(self) -> None:
        if not self._drawing and not self.prompt.isReadOnly():
            self.comparison.set_prompt(self.index, self.prompt.toPlainText())

    def _on_model(self, index: int) -> None:
        if not self._drawing and index >= 0 and self.model.itemText(index):
            self.comparison.set_model(
                self.index, self.model.itemData(index), self.model.itemText(index)
            )

    def _panel_settings(self) -> SamplingSettings:
        """The lane's settings with the panel's values (the rest kept as they are)."""
        panel = self.sampling.settings(draw_seed=False)
        return self.lane.settings.with_(**{f: getattr(panel, f) for f in PANEL_FIELDS})

    def _on_settings(self) -> None:
        if not self._drawing:
            self.comparison.set_settings(self.index, self._panel_settings())
            self.comparison.set_reading(self.index, self.sampling.reading())  # Mode: Read

    def _on_copy(self, combo_index: int) -> None:
        source = self.copy_from.itemData(combo_index)
        self.copy_from.setCurrentIndex(0)
        if source is not None:
            self.comparison.copy_lane(self.index, source)

    # -- drawing from the model -------------------------------------------------------------
    def _on_lane_changed(self, index: int | None) -> None:
        if index is None or index == self.index:
            self.draw()

    def _on_prompt_changed(self, _text: str, _same: bool) -> None:
        self._guarded(self._draw_prompt)
        self._draw_stale()

    def _on_lanes_changed(self, n: int) -> None:
        if self.index < n:
            self._fill_copy_from()

    def _on_tokens(self, index: int, records: list) -> None:
        if index == self.index and self._drawn_state is self.state:
            self.tokens.append_tokens(records)

    def _guarded(self, draw) -> None:
        """Draw without the widgets' own signals calling the model back."""
        self._drawing = True
        try:
            draw()
        finally:
            self._drawing = False

    def draw(self) -> None:
        """Everything the lane shows, from the model's lane."""
        if self.index < len(self.comparison.lanes):
            self._guarded(self._draw)

    def _draw(self) -> None:
        lane = self.lane
        self._draw_prompt()
        self._draw_model(lane)
        if self.sampling.reading() != lane.reading:
            self.sampling.set_reading(lane.reading)
        if self._panel_settings() != self._shown_settings(lane):
            self.sampling.apply(self._shown_settings(lane))
        self.more.setText(
            read_summary(lane.settings) if lane.reading else settings_summary(lane.settings)
        )
        self.status.setText(lane.status)
        self.error.setText(lane.error or "")
        self.error.setVisible(lane.error is not None)
        self._show_loading(lane.status.startswith("loading"))
        if self._drawn_state is not lane.state:  # another run: its tokens from the start
            self._drawn_state = lane.state
            self._ran_model = lane.model_path
            self.tokens.clear_tokens()
            self.tokens.append_tokens(list(lane.state.tokens))
            self._drawn_divergence = None
        if self._drawn_n != lane.state.n:  # a run faster than the window's 4 Hz timer
            self.redraw()
        marked = lane.focus if lane.focus is not None else lane.divergence  # a read's row
        if marked != self._drawn_divergence:
            self._drawn_divergence = marked
            self.tokens.select_step(marked)
        self.div_line.setVisible(marked is not None)
        if marked is not None:
            self.div_line.setValue(marked)
        self._draw_stale()

    def stale_parts(self) -> list[str]:
        """What changed since the results shown were made: prompt, settings, model
        (empty: they are the lane's, or it shows none)."""
        lane, state = self.lane, self.lane.state
        if not state.tokens and state.done is None and state.error is None:
            return []
        changed = []
        if state.prompt != self.comparison.prompt_of(self.index):
            changed.append("prompt")
        ran, now = state.settings, lane.settings
        if (
            ran.with_(prompt_cache=False) != now.with_(prompt_cache=False)
            or state.reading != lane.reading
        ):
            changed.append("settings")
        if self._ran_model != lane.model_path:
            changed.append("model")
        return changed

    def _draw_stale(self) -> None:
        """Grey the results and say why while they are not for what the lane now holds."""
        if self.index >= len(self.comparison.lanes):
            return
        changed = self.stale_parts()
        self.stale.setText(stale_text(changed) if changed else "")
        self.stale.setVisible(bool(changed))
        for veil in self.veils:
            veil.setVisible(bool(changed))

    def _show_loading(self, on: bool) -> None:
        """The loading row: a busy bar until the engine reports how far it is."""
        if on and self.load_bar.isHidden():
            self.load_bar.setRange(0, 0)
            self.load_note.clear()
        self.load_bar.setVisible(on)
        self.load_note.setVisible(on)

    def show_load(self, message: str, fraction: float) -> None:
        """The engine's progress while this lane's model loads (downloads, converts)."""
        if self.lane.status.startswith("loading"):
            show_progress(self.load_bar, message, fraction)
            self.load_note.setText(message)
            self.load_note.show()

    @staticmethod
    def _shown_settings(lane: Lane) -> SamplingSettings:
        """The settings the panel shows: a reading lane's without the chat template."""
        return lane.settings.with_(chat_template=False) if lane.reading else lane.settings

    def _draw_prompt(self) -> None:
        text = self.comparison.prompt_of(self.index)
        if self.prompt.toPlainText() != text:
            self.prompt.setPlainText(text)
        self.prompt.setReadOnly(self.comparison.same_prompt)  # the shared prompt, read-only

    def _draw_model(self, lane: Lane) -> None:
        found = next(
            (
                i
                for i in range(self.model.count())
                if self.model.itemData(i) == lane.model_path and self.model.itemText(i)
            ),
            -1,
        )
        if found < 0 and lane.model_name:  # a run's model the picker does not list
            self.model.addItem(lane.model_name, lane.model_path)
            found = self.model.count() - 1
        if found >= 0 and found != self.model.currentIndex():
            self.model.setCurrentIndex(found)

    def _fill_copy_from(self) -> None:
        self.copy_from.clear()
        self.copy_from.addItem("copy from…")
        for other in range(len(self.comparison.lanes)):
            if other != self.index:
                self.copy_from.addItem(f"Lane {lane_name(other)}", other)

    # -- layout -----------------------------------------------------------------------------
    def _toggle_sampling(self, on: bool) -> None:
        self.sampling.setVisible(on)
        self.more.setArrowType(Qt.DownArrow if on else Qt.RightArrow)
        self.set_base_height(self.base_height)

    def set_base_height(self, height: int) -> None:
        """The lane's minimum height: `height`, and never less than its contents need
        (an open sampling panel included), so nothing is squeezed over anything else;
        the lanes' area scrolls instead."""
        self.base_height = height
        self.layout().invalidate()
        self.layout().activate()
        self.setMinimumHeight(max(height, self.layout().totalMinimumSize().height()))

    def redraw(self) -> None:
        """The strip: p(chosen) and the scaled entropy of the lane's run so far."""
        state = self.state
        n = self._drawn_n = state.n
        x = np.arange(n)
        self.prob_curve.setData(x, state.prob[:n], connect="finite")  # NaN: not reported
        ent = state.entropy[:n]
        top = float(np.nanmax(ent)) if n and np.isfinite(ent).any() else 1.0
        self.entropy_curve.setData(x, ent / max(top, 1e-9), connect="finite")
        self.strip.setXRange(-0.5, max(n, 8) - 0.5, padding=0)
