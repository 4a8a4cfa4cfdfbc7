"""The model picker's Load settings…: a model's context length (capped or rotating KV
cache), KV cache precision (float, 8-bit, 4-bit) and the memory it needs against this
machine's, remembered per model (engine/models/model_prefs.py, which the engine reads
when it loads the model); plus named presets of sampling settings."""

from __future__ import annotations

from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
)

from engine.errors import SettingsError
from engine.models import model_prefs
from engine.models.load_options import MIN_CONTEXT, LoadOptions
from engine.models.memory_fit import model_fit

KV_CHOICES = (("Float (as the model runs)", None), ("8-bit", 8), ("4-bit", 4))


class ContextSpin(QSpinBox):
    """The context length: digits, or empty (shown as its special text) for the model's own."""

    def validate(self, text: str, pos: int):
        if not text.strip():  # cleared: the model's own context, not the last value again
            return QValidator.Acceptable, text, pos
        return super().validate(text, pos)

    def valueFromText(self, text: str) -> int:
        return self.minimum() if not text.strip() else super().valueFromText(text)


class LoadSettingsDialog(QDialog):
    """Choose how the model `spec` loads (its ModelInfo `info` gives the sizes).

    Args:
        spec: the model as the engine takes it (path, repo id, None: the default).
        info: its catalogue ModelInfo, or None when unknown (no memory estimate).
        get_sampling: returns the current SamplingSettings fields (for a preset).
        set_sampling: applies a preset's fields to the sampling controls.
    """

    def __init__(self, spec, info=None, get_sampling=None, set_sampling=None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Load settings")
        self.spec, self.info = spec, info
        self.get_sampling, self.set_sampling = get_sampling, set_sampling
        opts = model_prefs.load_options(spec)
        own = info.context_length if info else 131072
        self.context = ContextSpin(minimum=0, maximum=own, singleStep=512)
        self.context.setSpecialValueText(f"the model's ({own:,})")
        self.context.setValue(opts.context_length or 0)
        # Typed digits are read when the edit ends (Enter, focus out, OK), never clamped
        # keystroke by keystroke: "128" typed must stay 128, not become 64 then 6284.
        self.context.setKeyboardTracking(False)
        self.context.setToolTip(
            f"Tokens the KV cache holds, at least {MIN_CONTEXT:,}; empty: the model's own"
        )
        self.rotating = QCheckBox("Rotating (keep going, drop the oldest tokens)")
        self.rotating.setChecked(opts.context_mode == "rotating")
        self.kv = QComboBox()
        for label, bits in KV_CHOICES:
            self.kv.addItem(label, bits)
        self.kv.setCurrentIndex([b for _, b in KV_CHOICES].index(opts.kv_bits))
        self.kv.setToolTip("mlx-lm's quantized KV cache: less memory per token, a small error")
        self.memory = QLabel("")
        self.presets = QComboBox()
        self.preset_name = QLineEdit(placeholderText="preset name")
        save, apply = QPushButton("Save current"), QPushButton("Apply")
        presets = QHBoxLayout()
        for w in (self.presets, apply, self.preset_name, save):
            presets.addWidget(w)
        form = QFormLayout(self)
        form.addRow("Context length", self.context)
        form.addRow("", self.rotating)
        form.addRow("KV cache", self.kv)
        form.addRow("Memory", self.memory)
        form.addRow("Sampling presets", presets)
        self.error = QLabel("")
        form.addRow(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        form.addRow(buttons)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        save.clicked.connect(self._on_save_preset)
        apply.clicked.connect(self._on_apply_preset)
        for signal in (self.context.valueChanged, self.kv.currentIndexChanged):
            signal.connect(self._on_changed)
        self.rotating.toggled.connect(self._on_changed)
        self._fill_presets()
        self._on_changed()

    def options(self) -> LoadOptions:
        """The choice on screen (SettingsError when it is not a valid one)."""
        ctx = self.context.value() or None
        mode = "rotating" if self.rotating.isChecked() else "capped"
        return LoadOptions(ctx, self.kv.currentData(), mode)

    def _on_changed(self, *_):
        """The memory estimate and any error for the choice on screen (below the
        minimum context is an error said here and refused by OK, not rewritten)."""
        try:
            opts = self.options()
            self.error.setText("")
        except SettingsError as e:
            self.error.setText(str(e))
            return
        if self.info is not None:
            fit = model_fit(self.info, opts.context_length, opts.kv_bits)
            self.memory.setText(f"{fit.text()} (weights + KV cache at this context)")

    def accept(self) -> None:
        """Remember the options (the model reloads its cache with them)."""
        self.context.interpretText()  # digits typed but not yet confirmed count too
        try:
            model_prefs.set_load_options(self.spec, self.options())
        except SettingsError as e:
            self.error.setText(str(e))
            return
        super().accept()

    def _fill_presets(self) -> None:
        self.presets.clear()
        for name in sorted(model_prefs.sampling_presets()):
            self.presets.addItem(name)

    def _on_save_preset(self) -> None:
        if self.get_sampling is None:
            return
        try:
            model_prefs.save_sampling_preset(self.preset_name.text(), self.get_sampling())
        except SettingsError as e:
            self.error.setText(str(e))
            return
        self._fill_presets()
        self.presets.setCurrentText(self.preset_name.text().strip())

    def _on_apply_preset(self) -> None:
        preset = model_prefs.sampling_presets().get(self.presets.currentText())
        if preset is not None and self.set_sampling is not None:
            self.set_sampling(preset)
