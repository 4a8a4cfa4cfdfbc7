"""A playground window on the real default model, sharing one engine process."""

from __future__ import annotations

import pytest

from app.core.bridge import EngineBridge
from app.shell.window import PlaygroundWindow

LOAD_MS = 180_000
RUN_MS = 120_000


@pytest.fixture
def window(qtbot, engine_client, default_model_path):
    from engine.paths import data_dir

    (data_dir() / "settings.ini").unlink(missing_ok=True)  # each test starts fresh
    win = PlaygroundWindow(bridge=EngineBridge(client=engine_client, owns_client=False))
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(lambda: win.model_record is not None and not win.bridge.busy, timeout=LOAD_MS)
    yield win
    win.cleanup()


def start_run(win, prompt: str, temperature=0.0, max_tokens=16, seed=5, **extra):
    win.prompt.setPlainText(prompt)
    c = win.controls
    c.temp_spin.setValue(temperature)
    c.max_tokens.setValue(max_tokens)
    c.seed_lock.setChecked(True)
    c.seed.setValue(seed)
    for name, value in extra.items():
        getattr(c, name).setValue(value)
    win.run()


def run_and_wait(qtbot, win, prompt: str, **kw):
    start_run(win, prompt, **kw)
    qtbot.waitUntil(
        lambda: win.state.done is not None or win.state.error is not None, timeout=RUN_MS
    )
    qtbot.waitUntil(lambda: not win.bridge.busy, timeout=10_000)
    qtbot.waitUntil(lambda: not win._dirty and not win._stale, timeout=5_000)  # charts catch up
    return win.state


@pytest.fixture
def restore_palette(qapp):
    """The application palette and light theme back after a test that switched them."""
    from PySide6.QtGui import QPalette

    from app.core import appearance

    before = QPalette(qapp.palette())
    yield
    appearance.apply_theme("light")
    qapp.setPalette(before)
    appearance.repaint()
