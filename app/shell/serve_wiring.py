"""The Server menu in the playground (app/serve/): built over the window's pieces,
stopped when the window closes (File ▸ Quit closes every window, so quitting ends
the server too) or the application quits."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from app.serve.follow import FollowUi
from app.serve.menu import ServeMenu, ServeUi


class _StopOnClose(QObject):
    def __init__(self, menu: ServeMenu, parent):
        super().__init__(parent)
        self.menu = menu

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Close:
            self.menu.cleanup()
        return False


def wire_serve(window) -> ServeMenu:
    """Add the Server menu to `window` (a PlaygroundWindow); returns it."""
    follow = FollowUi(
        busy=lambda: window.bridge.busy,
        notice=window.show_notice,
        request_ended=window.history.refresh,
    )
    ui = ServeUi(
        window, window.model, window.statusBar(), window.show_notice, window.show_error, follow
    )
    menu = ServeMenu(window.menuBar(), ui, window)
    window.installEventFilter(_StopOnClose(menu, window))
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(menu.cleanup)
    return menu
