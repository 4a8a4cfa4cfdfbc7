"""Serve on port…: where to serve the loaded model, remembered in the settings store.

The host is 127.0.0.1 unless the person says otherwise; any other host lets other
machines use the model, so it needs the NAME of an environment variable holding an
API key (the key itself is never typed here, shown, stored or put on a command line).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
)

from app.core import settings_store

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
LOOPBACK = ("127.0.0.1", "localhost", "::1")
VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYS = {"host": "serve/host", "port": "serve/port", "key_env": "serve/api_key_env"}


@dataclass(frozen=True)
class ServeChoice:
    """Where to serve: host, port (0: any free port), the API key's variable or None."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    key_env: str | None = None

    def api_key(self) -> str | None:
        """The key the variable holds now (for following the server's requests)."""
        if self.key_env is None:
            return None
        return os.environ.get(self.key_env, "").strip() or None


def remembered() -> ServeChoice:
    """The last choice (the defaults where none or damaged)."""
    port = str(settings_store.value(KEYS["port"], str(DEFAULT_PORT)))
    return ServeChoice(
        str(settings_store.value(KEYS["host"], DEFAULT_HOST)).strip() or DEFAULT_HOST,
        int(port) if port.isdigit() and int(port) <= 65535 else DEFAULT_PORT,
        str(settings_store.value(KEYS["key_env"], "")).strip() or None,
    )


def remember(choice: ServeChoice) -> None:
    settings_store.set_value(KEYS["host"], choice.host)
    settings_store.set_value(KEYS["port"], str(choice.port))
    settings_store.set_value(KEYS["key_env"], choice.key_env or "")


def problem(choice: ServeChoice) -> str | None:
    """What is wrong with `choice`, in one sentence; None when it can be served."""
    if not choice.host or any(c.isspace() for c in choice.host):
        return "Give the address to listen on, such as 127.0.0.1."
    var = choice.key_env
    if var is None:
        if choice.host not in LOOPBACK:
            return (
                f"Listening on {choice.host} lets other machines use this model: name the "
                "environment variable that holds the API key they must send."
            )
        return None
    if not VAR_NAME.fullmatch(var):
        return f"“{var[:40]}” is not an environment variable's name (letters, digits, _)."
    if not os.environ.get(var, "").strip():
        return f"The environment variable {var} is not set (or empty) in Logitscope's environment."
    return None


class ServeDialog(QDialog):
    """Host, port and the API key's variable for the loaded model; OK only when valid."""

    def __init__(self, model_name: str, choice: ServeChoice | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Serve on port")
        self.setMinimumWidth(460)
        choice = choice or remembered()
        self.host = QLineEdit(choice.host)
        self.host.setToolTip("127.0.0.1: only this machine; 0.0.0.0: every network (needs a key)")
        self.port = QSpinBox()
        self.port.setRange(0, 65535)
        self.port.setSpecialValueText("any free port")
        self.port.setValue(choice.port)
        self.key_env = QLineEdit(choice.key_env or "")
        self.key_env.setPlaceholderText("e.g. LOGITSCOPE_API_KEY (needed beyond 127.0.0.1)")
        self.key_env.setToolTip(
            "The NAME of an environment variable holding the API key clients must send; "
            "the key itself is never typed, shown or saved here"
        )
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.hide()
        form = QFormLayout()
        form.addRow("Model", QLabel(model_name))
        form.addRow("Host", self.host)
        form.addRow("Port", self.port)
        form.addRow("API key variable", self.key_env)
        hint = QLabel(
            "Clients use it as an OpenAI-compatible server; every request is journaled "
            "and History lists it. The window's own engine is not touched."
        )
        hint.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.button(QDialogButtonBox.Ok).setText("Serve")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def choice(self) -> ServeChoice:
        return ServeChoice(
            self.host.text().strip(), self.port.value(), self.key_env.text().strip() or None
        )

    def accept(self) -> None:
        why = problem(self.choice())
        if why is not None:
            self.error.setText(why)
            self.error.show()
            return
        remember(self.choice())
        super().accept()
