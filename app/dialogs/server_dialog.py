"""Add server…: point Logitscope at an OpenAI-compatible server (vLLM, llama.cpp,
Ollama, LM Studio, mlx_lm.server), see its models, remember it."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
)

from app.core.servers import api_key_for, forget_server, load_servers, save_server, set_api_key
from engine.errors import LogitscopeError

EXAMPLE = "http://127.0.0.1:8080/v1"


class AddServerDialog(QDialog):
    """Asks the server for its models on a thread; OK gives the chosen model's spec."""

    answered = Signal(object)  # ServerInfo or an error message, from the thread

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Add server")
        self.setMinimumWidth(480)
        self.info = None
        self.spec: str | None = None
        self.url = QComboBox()
        self.url.setEditable(True)
        self.url.addItems([s["base_url"] for s in load_servers()])
        self.url.setCurrentText(self.url.currentText() or EXAMPLE)
        self.url.setToolTip("The server's OpenAI-compatible base URL, usually ending in /v1")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.Password)
        self.key.setPlaceholderText("optional; stored in the system keychain")
        self.connect_button = QPushButton("Connect")
        self.connect_button.setDefault(True)
        self.status = QLabel("Give the address and press Connect to list its models.")
        self.status.setWordWrap(True)
        self.models = QListWidget()
        self.models.setMinimumHeight(120)
        form = QFormLayout()
        form.addRow("Base URL", self.url)
        form.addRow("API key", self.key)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.forget = self.buttons.addButton("Forget server", QDialogButtonBox.DestructiveRole)
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(False)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.connect_button, 0, Qt.AlignRight)
        layout.addWidget(self.status)
        layout.addWidget(self.models, 1)
        layout.addWidget(self.buttons)
        self.connect_button.clicked.connect(self.connect_server)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.forget.clicked.connect(self._forget)
        self.answered.connect(self._on_answer)
        self.models.itemDoubleClicked.connect(lambda _item: self.accept())

    def connect_server(self) -> None:
        from engine.backends.base import normalize_base_url

        try:
            base = normalize_base_url(self.url.currentText())
        except LogitscopeError as e:
            self.status.setText(str(e))
            return
        key = self.key.text().strip() or api_key_for(f"{base}#")
        self.connect_button.setEnabled(False)
        self.status.setText(f"Asking {base} for its models…")

        def ask():
            from engine.backends.openai.catalogue import list_server_models

            try:
                self.answered.emit((list_server_models(base, key), key))
            except LogitscopeError as e:
                self.answered.emit((str(e), key))

        threading.Thread(target=ask, daemon=True, name="server-models").start()

    def _on_answer(self, payload) -> None:
        answer, key = payload
        self.connect_button.setEnabled(True)
        self.models.clear()
        if isinstance(answer, str):
            self.status.setText(answer)
            self.buttons.button(QDialogButtonBox.Ok).setEnabled(False)
            return
        self.info, self._key = answer, key
        for m in answer.models:
            ctx = f" · context {m.context_length:,}" if m.context_length else ""
            self.models.addItem(f"{m.id}{ctx}")
        self.models.setCurrentRow(0)
        n = len(answer.models)
        none = "" if n else " It lists none: load one on the server first."
        self.status.setText(f"{answer.label} at {answer.base_url}: {n} model(s).{none}")
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(n > 0)

    def accept(self) -> None:
        if self.info is None or self.models.currentRow() < 0:
            return
        save_server(self.info)
        typed = self.key.text().strip()
        if typed:
            where = set_api_key(self.info.base_url, typed)
            self.key_note = f"API key {where}."
        else:
            self.key_note = ""
        model = self.info.models[self.models.currentRow()].id
        self.spec = f"{self.info.base_url}#{model}"
        super().accept()

    def _forget(self) -> None:
        from engine.backends.base import normalize_base_url

        try:
            base = normalize_base_url(self.url.currentText())
        except LogitscopeError:
            return
        forget_server(base)
        index = self.url.findText(base)
        if index >= 0:
            self.url.removeItem(index)
        self.status.setText(f"Forgot {base} and its API key.")
