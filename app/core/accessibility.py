"""Accessible names and descriptions for every interactive control.

Screen readers read a control's accessible name. Qt derives one from a button's
text or a form label's buddy, but not for a spin box beside a plain label, a
symbol-only button ("?", "⤢", "‹") or a chart. `name_controls` gives every
interactive widget without a usable name one from its tooltip, placeholder or
label, and its tooltip as the description; `watch` does it for a window now and
again whenever it is shown or activated (lanes and tabs added later get names too).
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QGraphicsView,
    QLineEdit,
    QPlainTextEdit,
    QTabBar,
    QTextEdit,
    QWidget,
)

INTERACTIVE = (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QGraphicsView,
    QLineEdit,
    QPlainTextEdit,
    QTabBar,
    QTextEdit,
)
WORDS = re.compile(r"[A-Za-z0-9]{2,}")


def accessible_name(widget: QWidget) -> str:
    """The name a screen reader announces for `widget` ('' when it has none)."""
    iface = QAccessible.queryAccessibleInterface(widget)
    return iface.text(QAccessible.Name) if iface is not None else widget.accessibleName()


def _first_sentence(text: str) -> str:
    plain = re.sub(r"<[^>]+>", "", text).strip()
    return re.split(r"(?<=[.:;!?])\s|\n", plain, maxsplit=1)[0].rstrip(".:;")[:80]


def derived_name(widget: QWidget) -> str:
    """A name for `widget` from what it shows: its tooltip, placeholder or object name."""
    owner = widget.parentWidget()
    if isinstance(owner, QAbstractSpinBox | QComboBox):  # its own line edit: the owner's name
        return owner.accessibleName() or derived_name(owner)
    for text in (
        widget.toolTip(),
        getattr(widget, "placeholderText", lambda: "")(),
        widget.whatsThis(),
    ):
        if text and WORDS.search(text):
            return _first_sentence(text)
    name = widget.objectName() or type(widget).__name__
    return re.sub(r"(?<=[a-z])(?=[A-Z])|_", " ", name).strip().capitalize()


def name_controls(root: QWidget) -> int:
    """Give every interactive widget under `root` a usable accessible name (a name of
    words, not a lone symbol) and its tooltip as description. Returns how many it named."""
    named = 0
    for widget in [root, *root.findChildren(QWidget)]:
        if not isinstance(widget, INTERACTIVE):
            continue
        if not widget.accessibleDescription() and widget.toolTip():
            widget.setAccessibleDescription(re.sub(r"<[^>]+>", "", widget.toolTip())[:200])
        if widget.accessibleName() or WORDS.search(accessible_name(widget) or ""):
            continue
        widget.setAccessibleName(derived_name(widget))
        named += 1
    return named


class _Watcher(QObject):
    def eventFilter(self, obj, event):
        if event.type() in (QEvent.Show, QEvent.WindowActivate):
            name_controls(obj)
        return False


def watch(window: QWidget) -> None:
    """Name `window`'s controls now and each time it is shown or activated."""
    name_controls(window)
    watcher = _Watcher(window)
    window.installEventFilter(watcher)
