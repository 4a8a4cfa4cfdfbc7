"""One lifecycle for the playground's child windows (Compare, Inside the model, the Lab).

Each has an engine process of its own (an EngineBridge it owns unless given one),
Ctrl+Q quits from it, its geometry is fitted to the screen or restored as it was left
and saved when it hides or closes, closing it stops its engine once (after which the
playground makes a new window), and `bring_back` shows it again: un-minimised, raised
and focused. A plain mixin placed before the Qt base class:
`class LabWindow(ChildWindow, QWidget)`.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.core.accessibility import name_controls
from app.core.bridge import EngineBridge
from app.core.quit import add_quit_shortcut
from app.core.window_fit import place, remember


class ChildWindow:
    """The shared lifecycle (see the module docstring); call `start_child` in __init__."""

    closed: bool = False  # its engine is gone: the playground makes a new window
    bridge: EngineBridge

    def start_child(
        self, geometry_key: str, default_size: tuple[int, int], bridge: EngineBridge | None = None
    ) -> EngineBridge:
        """Its engine bridge (a new one it owns, or `bridge`), geometry and Ctrl+Q.

        Args:
            geometry_key: where its geometry is kept (settings "windows/KEY").
            default_size: its size when none was kept, shrunk to fit the screen.
            bridge: an engine bridge to use instead of a new one (tests).

        Returns:
            The bridge.
        """
        self.closed = False
        self._geometry_key = geometry_key
        self.bridge = bridge or EngineBridge(parent=self)
        place(self, geometry_key, default_size)  # fitted to the screen, or as left
        add_quit_shortcut(self)
        return self.bridge

    def bring_back(self):
        """Show the window in front, un-minimised (Ctrl+K, the Window menu); returns it."""
        name_controls(self)  # lanes and views added since get accessible names too
        state = self.windowState()
        if state & Qt.WindowMinimized:
            self.setWindowState((state & ~Qt.WindowMinimized) | Qt.WindowActive)
        self.show()
        self.raise_()
        self.activateWindow()
        return self

    def stop_child(self) -> None:
        """Hook: what the window stops before its engine does (timers); none by default."""

    def cleanup(self) -> None:
        """Stop the window's work and its engine process (once; closing calls it too)."""
        if self.closed:
            return
        self.closed = True
        self.stop_child()
        self.bridge.cleanup()

    def hideEvent(self, event) -> None:
        remember(self, self._geometry_key)
        super().hideEvent(event)

    def closeEvent(self, event) -> None:
        remember(self, self._geometry_key)
        self.cleanup()
        super().closeEvent(event)
