"""Compare, Inside and the Lab share one lifecycle (app/core/child_window.py): opened
again they come back un-minimised, their geometry is kept, and closing one stops it
once, after which a new window is made."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QWidget

from app.core import settings_store
from app.core.child_window import ChildWindow
from app.core.session_signals import SessionSignals
from app.core.window_fit import available_area
from app.session.session import Session
from app.shell.child_windows import ChildWindows
from engine.run.settings import SamplingSettings


@pytest.mark.parametrize(
    ("kind", "key"), [("compare", "compare"), ("inside", "inside"), ("lab", "lab")]
)
def test_a_minimised_child_window_comes_back(qtbot, kind, key):
    parent = QWidget()
    qtbot.addWidget(parent)
    model = SessionSignals(Session(), parent)
    windows = ChildWindows(
        parent, model, lambda: None, lambda: "a prompt", lambda: (None, "", SamplingSettings())
    )
    open_ = getattr(windows, f"open_{kind}")
    win = open_()
    assert isinstance(win, ChildWindow) and win.isVisible()
    win.setWindowState(Qt.WindowMinimized)  # minimised by the person
    assert win.isMinimized()
    assert open_() is win  # Ctrl+K / the Window menu
    assert not win.isMinimized() and win.isVisible()
    smallest = win.minimumSizeHint().expandedTo(win.minimumSize())
    win.resize((smallest + QSize(7, 5)).boundedTo(available_area(win).size()))
    size = win.size()
    win.hide()  # its geometry is kept…
    assert settings_store.value(f"windows/{key}") is not None
    win.close()
    assert win.closed
    win.cleanup()  # once: a second call does nothing
    again = open_()  # …and a new window comes back with it
    assert again is not win and not again.closed
    assert again.size() == size
    again.close()
    assert again.closed
