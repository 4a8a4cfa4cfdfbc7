"""CompareLane: one lane of a comparison: its own prompt, model and sampling
settings, its streamed tokens (shaded by probability) and a probability/entropy strip."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
)

from app.charts.base import pen, track
from app.core.theme import ENTROPY, RAW
from app.session.run_state import RunState
from app.widgets.controls import SamplingPanel
from app.widgets.model_picker import fill_models
from app.widgets.token_view import TokenView
from engine.settings import SamplingSettings

LANE_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2")
MAX_LANES = len(LANE_COLORS)  # Compare shows two to four lanes


class CompareLane(QFrame):
    stop_requested = Signal(object)  # this lane

    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.index = index
        self.color = LANE_COLORS[index % len(LANE_COLORS)]
        self.setFrameShape(QFrame.StyledPanel)
        self.state = RunState()
        self.divergence: int | None = None
        self.base_height = 0
        title = QLabel(f"<b style='color:{self.color}'>Lane {chr(65 + index)}</b>")
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
        fill_models(self.model)  # the same list as the window's picker, servers included
        # The window's own sampling panel (every setting, system prompt and mode included),
        # folded under a one-line summary so four lanes fit side by side.
        self.sampling = SamplingPanel()
        self.sampling.seed_lock.setChecked(True)  # a lane's seed is always its own
        self.sampling.seed_lock.hide()
        self.sampling.max_tokens.setValue(48)
        self.sampling.setMinimumHeight(self.sampling.sizeHint().height())  # never squashed
        self.sampling.hide()
        self.temperature, self.top_p = self.sampling.temp_spin, self.sampling.top_p
        self.seed, self.max_tokens = self.sampling.seed, self.sampling.max_tokens
        self.more = QToolButton()
        self.more.setCheckable(True)
        self.more.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.more.setArrowType(Qt.RightArrow)
        self.more.setToolTip("Show or hide this lane's sampling settings")
        self.more.toggled.connect(self._toggle_sampling)
        self.sampling.changed.connect(self._summarize)
        form = QFormLayout()
        form.addRow("Model", self.model)
        form.addRow(self.more)
        self._summarize()
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #8a1c1c; background: #fde2e1; padding: 4px;")
        self.error.hide()
        self.tokens = TokenView()
        self.strip = pg.PlotWidget()
        self.strip.setFixedHeight(90)
        self.strip.setMenuEnabled(False)
        self.strip.setMouseEnabled(x=False, y=False)
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
        layout.addWidget(self.tokens, 1)
        layout.addWidget(QLabel("<small>p(chosen) — entropy (scaled) — red: divergence</small>"))
        layout.addWidget(self.strip)
        self.stop_button.clicked.connect(lambda: self.stop_requested.emit(self))

    def settings(self) -> SamplingSettings:
        # Lanes are compared on TTFT and prefill speed: each prefills its whole prompt,
        # never a cache an earlier lane left behind.
        return self.sampling.settings(draw_seed=False).with_(prompt_cache=False)

    def copy_settings(self, other: CompareLane) -> None:
        self.prompt.setPlainText(other.prompt.toPlainText())
        self.model.setCurrentIndex(other.model.currentIndex())
        self.sampling.apply(other.settings())

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

    def _summarize(self) -> None:
        s = self.sampling.settings(draw_seed=False)
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
        self.more.setText(
            f"T {s.temperature:.2f} · top-p {s.top_p:.2f} · seed {s.seed} · "
            f"max {s.max_tokens}" + "".join(f" · {e}" for e in extra)
        )

    def model_path(self) -> str | None:
        return self.model.currentData()

    def model_name(self) -> str:
        """The lane's model as its picker names it."""
        return self.model.currentText()

    def follow_prompt(self, text: str | None) -> None:
        """Show the window's shared prompt in this lane's box, read-only (`text`), or
        give the box back to the lane's own prompt (None)."""
        if text is not None and self.prompt.toPlainText() != text:
            self.prompt.setPlainText(text)
        self.prompt.setReadOnly(text is not None)

    def show_run(self, state: RunState) -> None:
        """Show a finished run (a RunState) in this lane, nothing run: its prompt, its
        model in the picker, its settings with the seed it used (so the summary line
        says what made it), its tokens and how it ended."""
        settings = state.settings
        done = state.done
        if done is not None and getattr(done, "seed", None) is not None:
            settings = settings.with_(seed=done.seed)
        self.prompt.setPlainText(state.prompt)
        if state.model is not None and (i := self.model.findData(state.model.path)) >= 0:
            self.model.setCurrentIndex(i)
        self.sampling.apply(settings)
        self._summarize()
        self.reset(state.prompt, settings, model=state.model, sent=state.sent)
        self.add_tokens(list(state.tokens))
        for record in (state.done, state.error):
            if record is not None:
                self.state.end(record)
        label = state.run_id or "run"
        if state.branch_step is not None:
            label += f" · branch at step {state.branch_step}"
        self.status.setText(label)
        self.redraw()

    def reset(self, prompt: str, settings: SamplingSettings, model=None, sent=None) -> None:
        """A new run in this lane (`model` and `sent`: those of a run shown again)."""
        self.state = RunState(prompt=prompt, settings=settings, model=model, sent=sent)
        self.divergence = None
        self.tokens.clear_tokens()
        self.error.hide()
        self.div_line.hide()
        self.status.setText("queued")
        self.redraw()

    def name_run(self, run_id: str | None) -> None:
        """The journal's id for this lane's run (None: the history is not written)."""
        self.state.name(run_id)

    def set_model(self, record) -> None:
        """The model this lane's run runs on (reported by the engine as it loads)."""
        self.state.ran_on(record)

    def finish(self, record) -> None:
        """This lane's run ended with `record` (a DoneRecord or an ErrorRecord)."""
        self.state.end(record)

    def add_tokens(self, records) -> None:
        self.state.add_tokens(records)
        self.tokens.append_tokens(records)

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()

    def mark_divergence(self, step: int | None) -> None:
        self.divergence = step
        self.tokens.select_step(step)
        self.div_line.setVisible(step is not None)
        if step is not None:
            self.div_line.setValue(step)

    def redraw(self) -> None:
        n = self.state.n
        x = np.arange(n)
        self.prob_curve.setData(x, self.state.prob[:n], connect="finite")  # NaN: not reported
        ent = self.state.entropy[:n]
        top = float(np.nanmax(ent)) if n and np.isfinite(ent).any() else 1.0
        self.entropy_curve.setData(x, ent / max(top, 1e-9), connect="finite")
        self.strip.setXRange(-0.5, max(n, 8) - 0.5, padding=0)
