"""SamplingPanel: the sampling controls, read and written as SamplingSettings."""

from __future__ import annotations

import random
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QSlider,
    QSpinBox,
    QWidget,
)

from engine.run.settings import MAX_TEMPERATURE, SamplingSettings

SLIDER_STEPS = 200  # temperature slider: 0.01 per step


@dataclass(frozen=True)
class ControlsState:
    """Every value the sampling panel holds, to put back exactly (the tour's guest)."""

    settings: SamplingSettings  # the seed shown, drawn or not
    seed_locked: bool
    mode: int
    slide: bool


CHAT_MODE, RAW_MODE, READ_MODE = 0, 1, 2  # the Mode box's items
SYSTEM_HINTS = {
    CHAT_MODE: "System prompt (chat mode; empty = model default)",
    RAW_MODE: "Raw completion has no system prompt",
    READ_MODE: "Context read before the text, not scored (optional)",
}


def parse_stops(text: str) -> tuple[str, ...]:
    r"""'###, \n\n' -> ('###', '\n\n'): comma-separated, \n and \t escapes allowed."""
    parts = [p.strip() for p in text.split(",")]
    return tuple(p.replace("\\n", "\n").replace("\\t", "\t") for p in parts if p.strip())


def format_stops(stops) -> str:
    return ", ".join(s.replace("\n", "\\n").replace("\t", "\\t") for s in stops)


class SamplingPanel(QWidget):
    temperature_changed = Signal(float)
    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        self.temp_slider = QSlider(Qt.Horizontal)
        self.temp_slider.setRange(0, SLIDER_STEPS)
        self.temp_spin = self._dspin(
            0, MAX_TEMPERATURE, 0.05, 2, "0 = greedy (always the top token)"
        )
        row = QHBoxLayout()
        row.addWidget(self.temp_slider, 1)
        row.addWidget(self.temp_spin)
        form.addRow("Temperature", row)
        self.temp_slider.setToolTip("Drag: the temperature chart follows without re-running")
        self.top_p = self._dspin(
            0.01,
            1.0,
            0.05,
            2,
            "Nucleus: keep the smallest set of tokens whose probability sums to p (1 = off)",
        )
        self.top_k = QSpinBox()
        self.top_k.setRange(0, 100000)
        self.top_k.setToolTip("Keep only the k most likely tokens (0 = off)")
        self.min_p = self._dspin(
            0.0, 0.99, 0.01, 2, "Drop tokens below min-p × the top token's probability (0 = off)"
        )
        self.rep = self._dspin(0.01, 10.0, 0.05, 2, "Penalise tokens seen in the last 20 (1 = off)")
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 1_000_000)
        self.max_tokens.setToolTip("Stop after this many generated tokens")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("Same seed + same settings = same tokens")
        self.seed_lock = QCheckBox("keep")
        self.seed_lock.setToolTip(
            "Checked: every run uses this seed. Unchecked: a new seed "
            "each run (shown here afterwards)."
        )
        seed_row = QHBoxLayout()
        seed_row.addWidget(self.seed, 1)
        seed_row.addWidget(self.seed_lock)
        self.stops = QLineEdit()
        self.stops.setPlaceholderText(r"e.g.  ###, \n\n")
        self.stops.setToolTip(r"Comma-separated stop strings; \n is a newline")
        self.mode = QComboBox()
        self.mode.addItems(["Chat (template)", "Raw completion", "Read a text"])
        self.mode.setToolTip(
            "Chat wraps the prompt in the model's chat template; Raw completion sends it "
            "as is; Read a text scores every token of the text in the prompt box (its "
            "probability and rank under the model), without generating"
        )
        self.system = QPlainTextEdit()
        self.system.setPlaceholderText("System prompt (chat mode; empty = model default)")
        self.system.setFixedHeight(64)
        self.system.setTabChangesFocus(True)  # Tab moves on: a system prompt needs no tabs
        self.slide = QCheckBox("slide a window")
        self.slide.setChecked(True)
        self.slide.setToolTip(
            "A text longer than the context window: read it with a sliding window "
            "(checked), or refuse it and say how long it is"
        )
        for label, widget in (
            ("Top-p", self.top_p),
            ("Top-k", self.top_k),
            ("Min-p", self.min_p),
            ("Repetition penalty", self.rep),
            ("Max tokens", self.max_tokens),
        ):
            form.addRow(label, widget)
        form.addRow("Seed", seed_row)
        form.addRow("Stop strings", self.stops)
        form.addRow("Mode", self.mode)
        form.addRow("System", self.system)
        form.addRow("Long texts", self.slide)
        self._form = form
        self.temp_slider.valueChanged.connect(self._on_slider)
        self.temp_spin.valueChanged.connect(self._on_spin)
        for w in (self.top_p, self.min_p, self.rep):
            w.valueChanged.connect(self.changed)
        for w in (self.top_k, self.max_tokens, self.seed):
            w.valueChanged.connect(self.changed)
        self.mode.currentIndexChanged.connect(self.changed)
        self.mode.currentIndexChanged.connect(self._on_mode)
        self.system.textChanged.connect(self.changed)
        self.apply(SamplingSettings())
        self._on_mode(self.mode.currentIndex())

    def _on_mode(self, index: int) -> None:
        """The system prompt does nothing in raw completion mode: say so by disabling it.
        Reading a text samples nothing: the sampling settings rest (the temperature stays,
        for the temperature chart), the system box holds the context read before it."""
        self.system.setEnabled(index != RAW_MODE)
        self.system.setPlaceholderText(SYSTEM_HINTS.get(index, ""))
        self.system.setToolTip("" if index == CHAT_MODE else SYSTEM_HINTS.get(index, ""))
        reading = index == READ_MODE
        for w in (self.top_p, self.top_k, self.min_p, self.rep, self.max_tokens, self.seed):
            w.setEnabled(not reading)
        self.seed_lock.setEnabled(not reading)
        self.stops.setEnabled(not reading)
        self._form.setRowVisible(self.slide, reading)

    def reading(self) -> bool:
        """Whether Run reads the prompt box's text (Mode: Read a text)."""
        return self.mode.currentIndex() == READ_MODE

    def set_reading(self, on: bool) -> None:
        """Switch Mode to Read a text (on) or back to chat (off, from reading only)."""
        if on:
            self.mode.setCurrentIndex(READ_MODE)
        elif self.reading():
            self.mode.setCurrentIndex(CHAT_MODE)

    @staticmethod
    def _dspin(lo, hi, step, decimals, tip) -> QDoubleSpinBox:
        box = QDoubleSpinBox()
        box.setRange(lo, hi)
        box.setSingleStep(step)
        box.setDecimals(decimals)
        box.setToolTip(tip)
        return box

    def _on_slider(self, value: int) -> None:
        temp = value / SLIDER_STEPS * MAX_TEMPERATURE
        if abs(self.temp_spin.value() - temp) > 1e-9:
            self.temp_spin.setValue(temp)

    def _on_spin(self, temp: float) -> None:
        self.temp_slider.blockSignals(True)
        self.temp_slider.setValue(round(temp / MAX_TEMPERATURE * SLIDER_STEPS))
        self.temp_slider.blockSignals(False)
        self.temperature_changed.emit(temp)
        self.changed.emit()

    def settings(self, draw_seed: bool = True) -> SamplingSettings:
        """Current controls as settings; an unlocked seed is drawn anew for a run."""
        if draw_seed and not self.seed_lock.isChecked():
            self.seed.setValue(random.randrange(2**31 - 1))
        system = self.system.toPlainText().strip() or None
        return SamplingSettings(
            temperature=round(self.temp_spin.value(), 4),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            min_p=self.min_p.value(),
            repetition_penalty=self.rep.value(),
            max_tokens=self.max_tokens.value(),
            seed=self.seed.value(),
            stop=parse_stops(self.stops.text()),
            system_prompt=system,
            chat_template=self.mode.currentIndex() == CHAT_MODE,
        )

    def prompt_settings(self) -> SamplingSettings:
        """Only what changes the prompt's tokens (no seed drawn)."""
        return SamplingSettings(
            system_prompt=self.system.toPlainText().strip() or None,
            chat_template=self.mode.currentIndex() == CHAT_MODE,
        )

    def snapshot(self) -> ControlsState:
        """What the panel holds now (no seed drawn)."""
        return ControlsState(
            self.settings(draw_seed=False),
            self.seed_lock.isChecked(),
            self.mode.currentIndex(),
            self.slide.isChecked(),
        )

    def put_back(self, state: ControlsState) -> None:
        """Hold `state` again, field by field, the mode included."""
        self.apply(state.settings, state.seed_locked)
        self.mode.setCurrentIndex(state.mode)
        self.slide.setChecked(state.slide)

    def apply(self, s: SamplingSettings, seed_locked: bool | None = None) -> None:
        self.temp_spin.setValue(s.temperature)
        self.top_p.setValue(s.top_p)
        self.top_k.setValue(s.top_k)
        self.min_p.setValue(s.min_p)
        self.rep.setValue(s.repetition_penalty)
        self.max_tokens.setValue(s.max_tokens)
        if s.seed is not None:
            self.seed.setValue(s.seed)
        if seed_locked is not None:
            self.seed_lock.setChecked(seed_locked)
        self.stops.setText(format_stops(s.stop))
        if not (self.reading() and not s.chat_template):  # a read's settings keep the mode
            self.mode.setCurrentIndex(CHAT_MODE if s.chat_template else RAW_MODE)
        self.system.setPlainText(s.system_prompt or "")
