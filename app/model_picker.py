"""ModelPicker: choose a model (installed, a folder, or a .gguf file) and see
what it is: name, quantization, size on disk, context length and device."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QWidget,
)

from engine.models.catalogue import list_models
from engine.models.default_model import DEFAULT_MODEL_NAME
from engine.records import ModelRecord


def describe(m: ModelRecord) -> str:
    return (
        f"{m.architecture} · {m.quantization} · {m.size_bytes / 1e6:.0f} MB · "
        f"context {m.context_length:,} · {m.device}"
    )


class ModelPicker(QWidget):
    model_chosen = Signal(object)  # str path, or None for the default model

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.combo = QComboBox()
        self.combo.setMinimumWidth(200)
        self.combo.setMaximumWidth(360)
        self.combo.setToolTip("Installed models; pick one to load it")
        self.open_button = QPushButton("Open…")
        self.open_button.setToolTip("Open an MLX model folder or a .gguf file")
        self.info = QLabel("No model loaded")
        self.info.setObjectName("modelInfo")
        self.info.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # no layout jump
        layout.addWidget(QLabel("Model"))
        layout.addWidget(self.combo)
        layout.addWidget(self.open_button)
        layout.addWidget(self.info, 1)
        self.refresh()
        self.combo.activated.connect(self._on_activated)
        self.open_button.clicked.connect(self._on_open)

    def refresh(self, select: str | None = None) -> None:
        self.combo.blockSignals(True)
        self.combo.clear()
        models = list_models()
        if not any(m.name == DEFAULT_MODEL_NAME for m in models):
            self.combo.addItem(f"{DEFAULT_MODEL_NAME} (downloads on first use)", None)
        for m in models:
            self.combo.addItem(m.name, m.path)
        if select is not None:
            index = self.combo.findData(select)
            if index < 0:
                self.combo.addItem(select, select)
                index = self.combo.count() - 1
            self.combo.setCurrentIndex(index)
        self.combo.blockSignals(False)

    def current(self) -> str | None:
        return self.combo.currentData()

    def show_model(self, record: ModelRecord) -> None:
        self.info.setText(describe(record))
        self.info.setToolTip(record.path)
        self.refresh(select=record.path)

    def _on_activated(self, _index: int) -> None:
        self.model_chosen.emit(self.current())

    def open_dialog(self) -> None:
        """File ▸ Open model… (Ctrl+O)."""
        self._on_open()

    def _on_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a GGUF file (or cancel to pick a folder)", "", "GGUF models (*.gguf)"
        )
        if not path:
            path = QFileDialog.getExistingDirectory(self, "Open an MLX model folder")
        if path:
            self.refresh(select=path)
            self.model_chosen.emit(path)
