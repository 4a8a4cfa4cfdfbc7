"""A coloured frame drawn over the view a lesson ends on, following its size, never
taking a click; one at a time (a new highlight moves it)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QWidget

FRAME_COLOUR = "#f59e0b"  # amber: apart from the probability and chart colours
FRAME_WIDTH = 3
SHOWN_MS = 8000  # then it fades out of the way


class _Frame(QWidget):
    """Drawn around `target` from its parent (over nothing of the target's own: a
    section's title stays whole), or inside a target that is a window of its own."""

    def __init__(self, target: QWidget):
        super().__init__(target.parentWidget() or target)
        self.target = target
        self.setAttribute(Qt.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WA_NoSystemBackground)
        self.follow()

    def follow(self) -> None:
        """Match the target's place (its parent's coordinates, or its own rect)."""
        t = self.target
        if self.parentWidget() is t:
            self.setGeometry(t.rect())
        else:
            pad = FRAME_WIDTH + 1
            self.setGeometry(t.geometry().adjusted(-pad, -pad, pad, pad))

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        p.setPen(QPen(QColor(FRAME_COLOUR), FRAME_WIDTH))
        half = FRAME_WIDTH // 2 + 1
        p.drawRoundedRect(self.rect().adjusted(half, half, -half, -half), 6, 6)


class Highlighter(QObject):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.target: QWidget | None = None
        self.frame: _Frame | None = None
        self.timer = QTimer(self, singleShot=True, interval=SHOWN_MS)
        self.timer.timeout.connect(self.clear)

    def show(self, target: QWidget) -> None:
        """Frame `target` (raised over its children) for a few seconds."""
        self.clear()
        self.target, self.frame = target, _Frame(target)
        target.installEventFilter(self)
        self.frame.show()
        self.frame.raise_()
        self.timer.start()

    def clear(self) -> None:
        if self.target is not None:
            self.target.removeEventFilter(self)
        if self.frame is not None:
            self.frame.hide()
            self.frame.deleteLater()
        self.target = self.frame = None

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        moved = event.type() in (QEvent.Resize, QEvent.Move)
        if watched is self.target and self.frame is not None and moved:
            self.frame.follow()
            self.frame.raise_()
        return False
