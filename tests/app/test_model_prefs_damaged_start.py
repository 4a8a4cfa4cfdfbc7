"""The window starts whatever state the model-preferences file is in: a folder holding
a NUL, `/proc`, a file nested 100,000 deep. The picker lists the models and the banner
says what is wrong with the file, which stays as it is."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from app.shell.startup_model import load_on_start
from app.shell.window import PlaygroundWindow
from engine.models import model_prefs

DAMAGED = {
    "a folder holding a NUL": json.dumps({"folders": ["/tmp/a\x00b", "/proc"]}).encode(),
    "nested deep": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.fixture
def prefs(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(model_prefs, "_reported", set())
    return tmp_path / model_prefs.PREFS_FILE


@pytest.mark.parametrize("case", DAMAGED)
def test_the_window_starts_with_a_damaged_prefs_file(qtbot, prefs, case):
    prefs.write_bytes(DAMAGED[case])
    win = PlaygroundWindow(load_on_start=False)  # its engine starts only on a load
    qtbot.addWidget(win)
    combo = win.picker.combo
    assert any("SmolLM2" in combo.itemText(i) for i in range(combo.count()))

    loads, shown = [], []
    bridge = SimpleNamespace(model_loaded=SimpleNamespace(connect=lambda slot: None))
    load_on_start(bridge, "/some/local/model", loads.append, shown.append)  # as __init__
    assert loads == ["/some/local/model"]
    assert len(shown) == 1
    assert shown[0].startswith(f"The model preferences file {prefs} ")
    assert prefs.read_bytes() == DAMAGED[case]
    win.cleanup()
