"""PromptPanel: the prompt editor with its live token count and the prompt shown as
the model's tokens. It owns the GUI process's light tokenizer (loaded off the GUI
thread when a model loads) and counts with the same `encode_prompt` as the engine."""

from __future__ import annotations

import contextlib
import threading

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton, QStackedWidget, QWidget

from app.playground.prompt_tokens import PromptTokenView
from engine.errors import SettingsError
from engine.run.prompt import encode_prompt

TOKEN_COUNT_DELAY_MS = 150


class PromptPanel(QWidget):
    """Not a layout of its own: the window places `stack`, `token_count` and `show_tokens`."""

    tokenizer_ready = Signal(object)  # (model path, LightTokenizer or None), from a thread

    def __init__(self, controls, session, parent=None):
        """`session`: the Session model (the turn and conversation Run would send)."""
        super().__init__(parent)
        self.controls, self.session = controls, session
        self.tokenizer = None
        self.model = None  # the ModelRecord whose tokenizer counts
        self.prompt = QPlainTextEdit()
        self.prompt.setPlaceholderText("Type a prompt, then Ctrl+Enter to run")
        self.tokens_view = PromptTokenView()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.prompt)
        self.stack.addWidget(self.tokens_view)
        self.token_count = QLabel("0 tokens")
        self.token_count.setMinimumWidth(60)
        self.show_tokens = QPushButton("Tokens")
        self.show_tokens.setCheckable(True)
        self.show_tokens.setToolTip("Show the prompt split into the model's tokens")
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(TOKEN_COUNT_DELAY_MS)
        controls.changed.connect(self.timer.start)
        self.prompt.textChanged.connect(self.timer.start)
        self.timer.timeout.connect(self.update_count)
        self.show_tokens.toggled.connect(self._on_show_tokens)
        self.tokenizer_ready.connect(self._on_tokenizer)

    def next_prompt(self, text: str) -> tuple[int, object]:
        """(turn number, what Run would send) for `text`, from the session model."""
        return self.session.next_prompt(text, self.controls.mode.currentIndex() == 0)

    def load_tokenizer(self, record) -> None:
        """Load `record`'s tokenizer on a thread; counting resumes when it arrives. The
        same model loaded with other options keeps its tokenizer and counts against the
        record's context (the one chosen at load) at once."""
        same = self.model is not None and self.model.path == record.path
        self.model, path = record, record.path
        if same and self.tokenizer is not None:
            self.update_count()
            return
        if record.backend != "mlx":  # a server's tokenizer is not here: it counts itself
            self.tokenizer = None
            self.token_count.setText("server-side")
            self.token_count.setToolTip(
                "The server counts this model's tokens; it reports the prompt's size after a run"
            )
            self.tokens_view.show_tokens([], [], [])
            return

        def load():
            from engine.models.light_tokenizer import shared_tokenizer

            try:
                self.tokenizer_ready.emit((path, shared_tokenizer(path)))
            except Exception:  # counting tokens is a nicety; runs still work
                self.tokenizer_ready.emit((path, None))

        threading.Thread(target=load, daemon=True).start()

    def _on_tokenizer(self, payload) -> None:
        path, tokenizer = payload
        if self.model is not None and self.model.path == path:
            self.tokenizer = tokenizer
            self.update_count()

    def count(self, prompt: str) -> tuple[int, int] | None:
        """(tokens, system tokens) of the prompt as the engine will see it, if known."""
        if self.tokenizer is None:
            return None
        try:
            enc = encode_prompt(self.tokenizer, prompt, self.controls.prompt_settings())
        except SettingsError:
            return None
        return len(enc.ids), enc.system_tokens

    def update_count(self) -> None:
        if self.tokenizer is None:
            return
        text = self.prompt.toPlainText()
        if not text.strip():
            self.token_count.setText("0 tokens")
            self.tokens_view.show_tokens([], [], [])
            return
        try:
            ids = encode_prompt(self.tokenizer, text, self.controls.prompt_settings()).ids
        except SettingsError as e:
            self.token_count.setText(str(e))
            return
        ctx = (self.model.context_length or 0) if self.model else 0
        total, tip = len(ids), ""
        turn = self.next_prompt(text)
        if turn is not None and not isinstance(turn[1], str):  # a conversation goes with it
            with contextlib.suppress(SettingsError):
                total = len(
                    encode_prompt(self.tokenizer, turn[1], self.controls.prompt_settings()).ids
                )
            tip = f" · turn {turn[0]}: {total:,}"
        count = f"{len(ids):,} tokens{tip}" + (f" of {ctx:,}" if ctx else "")
        self.token_count.setText(count)
        self.token_count.setToolTip(
            f"{count} (the message; with the conversation before it)" if tip else count
        )
        self.token_count.setStyleSheet("color: #b00020;" if ctx and total >= ctx else "")
        if self.show_tokens.isChecked():
            raw = [self.tokenizer.token_bytes(i) for i in ids]
            self.tokens_view.show_tokens(ids, self.tokenizer.labels(ids), raw)

    def _on_show_tokens(self, on: bool) -> None:
        self.stack.setCurrentIndex(1 if on else 0)
        self.show_tokens.setText("Edit" if on else "Tokens")
        if on:
            self.update_count()
