"""Every visible interactive control of the playground, Compare, Inside and Lab has an
accessible name made of words (not a lone "?" or "⤢"), as a screen reader announces it."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QWidget

from app.core.accessibility import INTERACTIVE, WORDS, accessible_name, name_controls
from app.core.bridge import EngineBridge
from app.shell.window import PlaygroundWindow
from tests.replay import ReplayClient


@pytest.fixture
def playground(qtbot):
    from engine.store.paths import data_dir

    (data_dir() / "settings.ini").unlink(missing_ok=True)
    win = PlaygroundWindow(
        bridge=EngineBridge(client=ReplayClient(None), owns_client=False), load_on_start=False
    )
    qtbot.addWidget(win)
    win.show()
    yield win
    win.cleanup()


def _unnamed(window: QWidget) -> list[str]:
    return [
        f"{type(w).__name__} {w.objectName()!r} {accessible_name(w)!r}"
        for w in [window, *window.findChildren(QWidget)]
        if isinstance(w, INTERACTIVE)
        and w.isVisibleTo(window)
        and not WORDS.search(accessible_name(w) or "")
    ]


def test_every_visible_control_has_a_name(qtbot, playground):
    windows = [
        playground,
        playground.open_compare(),
        playground.open_inside(),
        playground.open_lab(),
    ]
    for win in windows:
        qtbot.waitExposed(win)
        assert _unnamed(win) == [], win.windowTitle()
    frame = playground.charts.findChildren(QWidget, "")[0].window()
    assert frame is playground
    helps = [b for b in playground.findChildren(QWidget) if getattr(b, "text", None)
             and callable(b.text) and b.text() in ("?", "⤢")]  # fmt: skip
    assert helps and all(WORDS.search(accessible_name(b)) for b in helps)
    assert any(accessible_name(b).startswith("Explain the Next-token") for b in helps)


def test_name_controls_uses_the_tooltip_for_symbol_buttons(qtbot):
    from PySide6.QtWidgets import QSpinBox, QToolButton, QVBoxLayout

    root = QWidget()
    qtbot.addWidget(root)
    button, spin = QToolButton(), QSpinBox()
    button.setText("‹")
    button.setToolTip("Previous run of this turn. Earlier runs stay.")
    spin.setToolTip("Maximum tokens to generate")
    layout = QVBoxLayout(root)
    layout.addWidget(button)
    layout.addWidget(spin)
    assert name_controls(root) == 3  # the spin box's own line edit too
    assert accessible_name(button) == "Previous run of this turn"
    assert accessible_name(spin) == "Maximum tokens to generate"
    assert button.accessibleDescription() == "Previous run of this turn. Earlier runs stay."
