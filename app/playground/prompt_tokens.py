"""PromptTokenView: the prompt as the model sees it, split into tokens
(alternating colours; the id, text and bytes of each token on hover). Tokens that
hold part of a UTF-8 character show as their bytes, e.g. `<0xE6><0x97>`."""

from __future__ import annotations

import html

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextEdit, QToolTip

from app.widgets.token_view import STEP_PROPERTY

PALETTE = ("#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf0")


class PromptTokenView(QTextEdit):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMouseTracking(True)
        self.ids: list[int] = []
        self.pieces: list[str] = []
        self.raw: list[bytes] = []

    def show_tokens(self, ids: list[int], labels: list[str], raw: list[bytes]) -> None:
        self.clear()
        self.ids, self.pieces, self.raw = list(ids), list(labels), list(raw)
        cursor = QTextCursor(self.document())
        for i, piece in enumerate(labels):
            fmt = QTextCharFormat()
            fmt.setBackground(QColor(PALETTE[i % len(PALETTE)]))
            fmt.setProperty(STEP_PROPERTY, i)
            shown = piece.replace("\n", "↵\n") if piece.strip() == "" else piece
            cursor.insertText(shown, fmt)

    def mouseMoveEvent(self, event):
        cursor = self.cursorForPosition(event.position().toPoint())
        cursor.movePosition(QTextCursor.Right)
        index = cursor.charFormat().property(STEP_PROPERTY)
        if index is not None and int(index) < len(self.ids):
            i = int(index)
            QToolTip.showText(
                event.globalPosition().toPoint(),
                f"token {i} · id <b>{self.ids[i]}</b> · "
                f"<code>{html.escape(repr(self.pieces[i]))}</code> · bytes "
                f"<code>{self.raw[i].hex(' ') if i < len(self.raw) else '?'}</code>",
                self,
            )
        super().mouseMoveEvent(event)
