"""Quitting from any Logitscope window: File ▸ Quit and Ctrl+Q close every window
(children first, each stopping its engine process), then end the event loop."""

from __future__ import annotations


def quit_app() -> bool:
    """File ▸ Quit: close every window (each closeEvent stops its engine process), then
    end the event loop. Child windows (Inside, Lab, Compare) close first: hiding the
    playground would hide them without a closeEvent. Returns False if one refused."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    windows = [w for w in app.topLevelWidgets() if w.isWindow() and w.isVisible()]
    windows.sort(key=lambda w: w.parentWidget() is None)  # children first
    for w in windows:
        if not w.close():
            return False
    app.quit()
    return True


def add_quit_shortcut(window) -> None:
    """Ctrl+Q quits from any Logitscope window, not only the playground's menu."""
    from PySide6.QtGui import QKeySequence, QShortcut

    QShortcut(QKeySequence("Ctrl+Q"), window, activated=quit_app)
