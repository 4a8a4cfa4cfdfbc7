"""The "Right-sized" button beside the model picker, and its settings dialog.

Checked, each turn the person runs is answered by the loaded model first and, when its
answer's confidence is below the threshold, by the larger model chosen here
(app/playground/right_size_flow.py). The choice is remembered in the settings file
("right_size/..."); the tour sets it aside like every other control.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QMenu,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.core import settings_store
from app.session.right_size import DEFAULT_THRESHOLD, RightSizing
from engine.errors import SettingsError
from engine.lab import routing
from engine.lab.confidence import SIGNALS

TIP = (
    "Answer with the right-sized model: the loaded (small) model answers each turn first; "
    "when its answer's confidence is below your threshold, the larger model you chose "
    "answers the same turn instead. Both answers stay (the turn's ‹ › arrows, Branches, "
    "History), and the line above the answer says why. The arrow chooses the large model "
    "and the threshold."
)
KEYS = ("right_size/on", "right_size/large", "right_size/signal", "right_size/threshold")


class RightSizeDialog(QDialog):
    """Choose the model to escalate to, the signal and the threshold."""

    def __init__(self, sizing: RightSizing, small: str | None, parent=None):
        from app.widgets.model_picker import fill_models

        super().__init__(parent)
        self.setWindowTitle("Answer with the right-sized model")
        self.small = small
        self.large = QComboBox()
        fill_models(self.large)
        for i in reversed(range(self.large.count())):  # the default model's placeholder
            if self.large.itemData(i) is None and self.large.itemText(i):
                self.large.removeItem(i)
        if sizing.large and self.large.findData(sizing.large) < 0:
            self.large.addItem(sizing.large.rstrip("/").rsplit("/", 1)[-1], sizing.large)
        index = self.large.findData(sizing.large) if sizing.large else -1
        self.large.setCurrentIndex(index if index >= 0 else self._first_other())
        self.signal = QComboBox()
        for key in routing.RUN_SIGNALS:
            self.signal.addItem(f"{routing.label(key)}: {SIGNALS[key][0]}", key)
        self.signal.setCurrentIndex(max(0, self.signal.findData(sizing.signal)))
        self.threshold = QDoubleSpinBox()
        self.threshold.setDecimals(3)
        self.threshold.setValue(sizing.threshold)
        self.error = QLabel("")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c0392b")
        why = QLabel(
            "The small model is the one loaded now. Its answer is kept when the signal is at "
            "or above the threshold; below it the large model answers the same turn. "
            "Lab ▸ Routing measures, on a question set, which threshold keeps 95 % of the "
            "large model's accuracy and what it saves."
        )
        why.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Large model", self.large)
        form.addRow("Escalate when", self.signal)
        form.addRow("is below", self.threshold)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(why)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.signal.currentIndexChanged.connect(self._range)
        self._range()
        self.setMinimumWidth(460)

    def _first_other(self) -> int:
        """The first model in the list that is not the small one (0: none is)."""
        from engine.lab.routing import model_key

        small = model_key(self.small) if self.small else None
        for i in range(self.large.count()):
            data = self.large.itemData(i)
            if data and model_key(data) != small:
                return i
        return 0

    def _range(self) -> None:
        """A probability from 0 to 1, or a negated entropy from -50 to 0 nats."""
        if routing.is_probability(self.signal.currentData()):
            self.threshold.setRange(0.0, 1.0)
            self.threshold.setSingleStep(0.05)
            self.threshold.setSuffix("")
        else:
            self.threshold.setRange(routing.ENTROPY_FLOOR, 0.0)
            self.threshold.setSingleStep(0.25)
            self.threshold.setSuffix(" nats")

    def sizing(self) -> RightSizing:
        return RightSizing(
            self.large.currentData() or "", self.signal.currentData(), self.threshold.value()
        )

    def accept(self) -> None:
        """Settings that cannot work stay in the dialog, with the sentence saying why."""
        try:
            self.sizing().checked(self.small)
        except SettingsError as e:
            self.error.setText(f"{str(e)[:1].upper()}{str(e)[1:]}.")
            return
        super().accept()


class RightSizeControl(QWidget):
    """The checkable "Right-sized" button (its arrow: the settings dialog)."""

    changed = Signal()

    def __init__(self, small_spec, parent=None):
        """`small_spec() -> str | None`: the loaded model's spec (for the checks)."""
        from PySide6.QtWidgets import QHBoxLayout

        super().__init__(parent)
        self.small_spec = small_spec
        self.settings = _load()
        self.held = False  # True while the tour is open: changes are not remembered
        self.button = QToolButton()
        self.button.setText("Right-sized")
        self.button.setCheckable(True)
        self.button.setToolTip(TIP)
        self.button.setPopupMode(QToolButton.MenuButtonPopup)
        menu = QMenu(self.button)
        menu.addAction("Choose the large model and threshold…", self.choose)
        self.button.setMenu(menu)
        self.button.setChecked(settings_store.value(KEYS[0], "false") == "true")
        self.button.toggled.connect(self._on_toggled)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.button)

    def sizing(self) -> RightSizing | None:
        """The person's cascade settings while the button is on, else None."""
        return self.settings if self.button.isChecked() else None

    def choose(self) -> bool:
        """The settings dialog; True when the person chose (remembered)."""
        dialog = RightSizeDialog(self.settings, self.small_spec(), self.window())
        if dialog.exec() != QDialog.Accepted:
            return False
        self.set(dialog.sizing(), True)
        return True

    def set(self, sizing: RightSizing, on: bool) -> None:
        """Take these settings (remembered) and turn the button on or off."""
        self.settings = sizing
        self.button.blockSignals(True)
        self.button.setChecked(on)
        self.button.blockSignals(False)
        self._save()
        self.changed.emit()

    def snapshot(self) -> tuple[RightSizing, bool]:
        return self.settings, self.button.isChecked()

    def hold(self, held: bool) -> None:
        """While held (the tour is open), changes are not written to the settings file."""
        self.held = held

    def _on_toggled(self, on: bool) -> None:
        if on and not self.settings.large and not self.choose():  # nothing to escalate to
            self.button.blockSignals(True)
            self.button.setChecked(False)
            self.button.blockSignals(False)
        self._save()
        self.changed.emit()

    def _save(self) -> None:
        if self.held:
            return
        s = self.settings
        on = "true" if self.button.isChecked() else "false"
        values = (on, s.large, s.signal, repr(float(s.threshold)))
        for key, value in zip(KEYS, values, strict=True):
            settings_store.set_value(key, value)


def _load() -> RightSizing:
    """The remembered settings (defaults for what is missing or damaged)."""
    signal = str(settings_store.value(KEYS[2], routing.DEFAULT_SIGNAL))
    try:
        threshold = float(settings_store.value(KEYS[3], repr(DEFAULT_THRESHOLD)))
    except (TypeError, ValueError):
        threshold = DEFAULT_THRESHOLD
    if signal not in routing.RUN_SIGNALS:
        signal = routing.DEFAULT_SIGNAL
    return RightSizing(str(settings_store.value(KEYS[1], "") or ""), signal, threshold)
