"""The model picker says what discovery left out, and why, in its tooltip (the command
line's `logitscope models --verbose` lists the same items)."""

from __future__ import annotations

from app.widgets.model_picker import PICKER_TIP, SKIPPED_SHOWN, ModelPicker, skipped_text
from engine.models.scan_guard import Skipped


def test_the_pickers_tooltip_names_each_item_left_out(qtbot, tmp_path, monkeypatch):
    home = tmp_path / "home"
    manifests = home / ".ollama/models/manifests/registry.ollama.ai/library"
    (manifests / "deep").mkdir(parents=True)
    (manifests / "deep/latest").write_text("[" * 100_000 + "]" * 100_000)
    for var in ("HF_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS", "LLAMA_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hf"))
    picker = ModelPicker()
    qtbot.addWidget(picker)
    picker.refresh()
    tip = picker.combo.toolTip()
    assert tip.startswith(PICKER_TIP)
    assert "1 item left out of this list:" in tip
    assert str(manifests / "deep") in tip and "Ollama" in tip


def test_a_long_list_of_skipped_items_is_cut_and_says_where_the_rest_is():
    items = [Skipped(f"/x/{i}", "folder /x", "unreadable") for i in range(SKIPPED_SHOWN + 3)]
    text = skipped_text(items)
    assert text.count("• ") == SKIPPED_SHOWN
    assert text.endswith("… and 3 more (logitscope models --verbose lists all)")
    assert skipped_text([]) == ""
