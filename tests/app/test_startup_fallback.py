"""A remembered server that is down at start: the playground loads the last local
model instead and says which server did not answer."""

from __future__ import annotations

import socket

from app.core import settings_store
from app.core.bridge import EngineBridge
from app.shell.startup_model import LAST_LOCAL_KEY, fallback_for, load_on_start
from app.shell.window import PlaygroundWindow
from engine.store.paths import data_dir
from tests.app.conftest import LOAD_MS


def closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fallback_is_the_last_local_model_still_on_disk(tmp_path):
    assert fallback_for(str(tmp_path)) == str(tmp_path)
    assert fallback_for(str(tmp_path / "gone")) is None  # None: the default model
    assert fallback_for("http://host:8080/v1#m") is None


def test_a_remembered_server_that_is_down_falls_back_to_the_local_model(
    qtbot, engine_client, default_model_path
):
    (data_dir() / settings_store.SETTINGS_FILE).unlink(missing_ok=True)
    port = closed_port()
    spec = f"http://127.0.0.1:{port}/v1#some-model"
    settings_store.set_value("model", spec)
    settings_store.set_value(LAST_LOCAL_KEY, str(default_model_path))
    win = PlaygroundWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False), load_on_start=False
    )
    qtbot.addWidget(win)
    win.show()
    assert win.picker.current() == spec
    load_on_start(win.bridge, win.picker.current(), win.load_model, win.show_error)  # as __init__
    qtbot.waitUntil(lambda: win.model_record is not None and not win.bridge.busy, timeout=LOAD_MS)
    assert win.model_record.path == str(default_model_path)
    assert win.picker.current() == str(default_model_path)
    text = win.banner.text()
    assert win.banner.isVisible()
    assert text.startswith(f"The server at 127.0.0.1:{port} did not answer (")
    assert f"loaded {default_model_path.name} instead" in text
    assert settings_store.value(LAST_LOCAL_KEY) == str(default_model_path)
    win.cleanup()
