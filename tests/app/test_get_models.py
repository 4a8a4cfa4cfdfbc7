"""File ▸ Get models… against a local fake hub: search results with their facts and
fit, a GGUF repo's quantizations, a download with its byte progress, an error in
place; and Load settings… remembering context length and KV precision."""

from __future__ import annotations

import pytest

from app.core.get_models import GetModelsDialog
from app.dialogs.load_settings import LoadSettingsDialog
from engine.models import hub_fetch, model_prefs
from engine.models.load_options import LoadOptions
from tests.engine.test_hub import GGUF_BYTES
from tests.engine.test_hub import fake_hub as fake_hub  # noqa: F401 - the fixture


@pytest.fixture
def dialog(qtbot, fake_hub, monkeypatch):  # noqa: F811
    monkeypatch.setattr(hub_fetch, "CHUNK", 16384)
    d = GetModelsDialog()
    qtbot.addWidget(d)
    return d


def test_search_choose_a_quantization_and_download(qtbot, dialog):
    dialog.query.setText("smollm2")
    dialog.search_button.click()
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 2, timeout=10_000)
    row = [dialog.table.item(0, c).text() for c in range(dialog.table.columnCount())]
    assert row == [
        "bartowski/SmolLM2-135M-Instruct-GGUF",
        "GGUF",
        "—",
        "135 M",
        "0.00 GB",
        "900",
        "apache-2.0",
        "fits",
    ]
    dialog.table.selectRow(0)
    qtbot.waitUntil(lambda: dialog.file.count() == 2, timeout=10_000)
    assert dialog.file.itemText(0).startswith("Q4_K_M · 0.00 GB · fits")
    with qtbot.waitSignal(dialog.downloaded, timeout=10_000) as got:
        dialog.download_button.click()
    assert got.args[0].endswith("SmolLM2-135M-Instruct-Q4_K_M.gguf")
    assert dialog.bar.value() == dialog.bar.maximum() == 1000
    assert dialog.bar.format() == f"{len(GGUF_BYTES) / 1e6:,.1f} of {len(GGUF_BYTES) / 1e6:,.1f} MB"


def test_a_failure_is_said_in_place(qtbot, dialog, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    dialog.query.setText("smollm2")
    dialog.search_button.click()
    qtbot.waitUntil(lambda: dialog.status.text().startswith("offline"), timeout=5_000)
    assert dialog.download_button.isEnabled()


def test_load_settings_are_remembered(qtbot, default_model_path):
    from engine.models.catalogue import inspect_model

    spec = str(default_model_path)
    d = LoadSettingsDialog(spec, inspect_model(default_model_path))
    qtbot.addWidget(d)
    d.context.setValue(2048)
    d.kv.setCurrentIndex(1)
    assert d.memory.text().startswith("fits: 0.1 GB of")
    d.rotating.setChecked(True)
    assert "cannot be quantized" in d.error.text()
    d.rotating.setChecked(False)
    d.accept()
    try:
        assert model_prefs.load_options(spec) == LoadOptions(2048, 8)
    finally:
        model_prefs.set_load_options(spec, LoadOptions())
