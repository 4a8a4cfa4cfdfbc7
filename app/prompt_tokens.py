"""PromptTokenView: the prompt as the model sees it, split into tokens
(alternating colours, the id and text of each token on hover)."""

from __future__ import annotations

import html

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextEdit, QToolTip

from app.token_view import STEP_PROPERTY, visible

PALETTE = ("#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf0")


class PromptTokenView(QTextEdit):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMouseTracking(True)
        self.ids: list[int] = []
        self.pieces: list[str] = []

    def show_tokens(self, ids: list[int], pieces: list[str]) -> None:
        self.clear()
        self.ids, self.pieces = list(ids), list(pieces)
        cursor = QTextCursor(self.document())
        for i, piece in enumerate(pieces):
            fmt = QTextCharFormat()
            fmt.setBackground(QColor(PALETTE[i % len(PALETTE)]))
            fmt.setProperty(STEP_PROPERTY, i)
            cursor.insertText(visible(piece), fmt)

    def mouseMoveEvent(self, event):
        cursor = self.cursorForPosition(event.position().toPoint())
        cursor.movePosition(QTextCursor.Right)
        index = cursor.charFormat().property(STEP_PROPERTY)
        if index is not None and int(index) < len(self.ids):
            i = int(index)
            QToolTip.showText(
                event.globalPosition().toPoint(),
                f"token {i} · id <b>{self.ids[i]}</b> · "
                f"<code>{html.escape(repr(self.pieces[i]))}</code>",
                self,
            )
        super().mouseMoveEvent(event)
