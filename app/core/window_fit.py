"""Windows that fit the screen they open on and come back where they were left.

`place(window, key, default)` gives a window its remembered geometry (kept in the
settings store under `windows/<key>`), shrunk to the screen's available area if
that area is now smaller, or else a first size: `default` shrunk to fit, centred.
`remember(window, key)` saves it; windows call it when they close or hide.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QRect, QSize

from app.core import settings_store

SCREEN_SHARE = 0.95  # a first size leaves a margin of the screen free


def available_area(window) -> QRect | None:
    """The available geometry (without docks and task bars) of the window's screen."""
    screen = window.screen()
    return screen.availableGeometry() if screen is not None else None


def fitted_size(default: tuple[int, int], area: QRect | None) -> QSize:
    """`default`, shrunk to SCREEN_SHARE of `area` where it is bigger."""
    width, height = default
    if area is not None:
        width = min(width, int(area.width() * SCREEN_SHARE))
        height = min(height, int(area.height() * SCREEN_SHARE))
    return QSize(width, height)


def place(window, key: str, default: tuple[int, int], area: QRect | None = None) -> bool:
    """Restore or fit the window's geometry; returns True if a saved one was restored.

    Args:
        area: the screen area to fit (the window's screen's available geometry if None).
    """
    area = area or available_area(window)
    saved = settings_store.value(f"windows/{key}")
    restored = isinstance(saved, QByteArray) and window.restoreGeometry(saved)
    if not restored:
        window.resize(fitted_size(default, area))
    if area is not None:
        size = window.size().boundedTo(area.size())
        if size != window.size():
            window.resize(size)
        frame = QRect(window.pos(), window.size())
        if not restored or not area.contains(frame):
            frame.moveCenter(area.center())
            window.move(frame.topLeft())
    return bool(restored)


def remember(window, key: str) -> None:
    """Save the window's geometry: only of a window that was shown (one never shown has
    no place of its own), and not while minimised (that is not a size)."""
    if window.windowHandle() is not None and not window.isMinimized():
        settings_store.set_value(f"windows/{key}", window.saveGeometry())
