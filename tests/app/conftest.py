"""Playground windows for app tests: `replay_window` on records captured once from the
real default model (tests/replay.py, most tests), `window` on the real model itself,
sharing one engine process (the end-to-end tests)."""

from __future__ import annotations

import pytest

from app.core.bridge import EngineBridge
from app.shell.window import PlaygroundWindow

LOAD_MS = 180_000
RUN_MS = 120_000


@pytest.fixture
def window(qtbot, engine_client, default_model_path):
    from engine.store.paths import data_dir

    (data_dir() / "settings.ini").unlink(missing_ok=True)  # each test starts fresh
    win = PlaygroundWindow(bridge=EngineBridge(client=engine_client, owns_client=False))
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(lambda: win.model_record is not None and not win.bridge.busy, timeout=LOAD_MS)
    yield win
    win.cleanup()


def replay_name(node) -> str:
    """The cassette of a test: tests/data/replay/<module>__<test>[<param>].json."""
    module = node.module.__name__.rsplit(".", 1)[-1]
    name = node.name.replace("[", "-").replace("]", "")
    return f"{module}__{''.join(c if c.isalnum() or c in '-_' else '_' for c in name)}"


@pytest.fixture
def replay_window(request, qtbot):
    """A playground window whose engine answers from the test's recording: what the real
    default model answered to the same requests (LOGITSCOPE_REPLAY=record captures it;
    scripts/capture_replay.py). A request the recording does not hold fails the test."""
    from engine.store.paths import data_dir
    from tests.replay import RecordingClient, ReplayClient, recording_mode

    (data_dir() / "settings.ini").unlink(missing_ok=True)  # each test starts fresh
    name = replay_name(request.node)
    if recording_mode():
        from engine.process.client import EngineClient

        default = request.getfixturevalue("default_model_path")
        client = RecordingClient(EngineClient(), str(default))  # a fresh engine per recording
    else:
        client = ReplayClient(name)
    win = PlaygroundWindow(bridge=EngineBridge(client=client, owns_client=False))
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(lambda: win.model_record is not None and not win.bridge.busy, timeout=LOAD_MS)
    yield win
    win.cleanup()
    if recording_mode():
        client.client.close()
        client.save(name)
    else:
        assert not client.unmatched, f"requests not in the recording {name}.json"


def pytest_collection_modifyitems(config, items):
    """Tests on a replaying window are marked `replay` (scripts/capture_replay.py
    re-captures them); in record mode they need the real model."""
    from tests.replay import recording_mode

    for item in items:
        if "replay_window" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.replay)
            if recording_mode():
                item.add_marker(pytest.mark.real_model)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "replay: runs on engine records captured once from the real model"
    )


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
