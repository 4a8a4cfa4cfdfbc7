from importlib.metadata import version

from PySide6.QtCore import qVersion

from app.dialogs.about import about_text, show_about


def test_about_box_names_every_version_and_the_device(qtbot, replay_window):
    record = replay_window.model_record
    box = show_about(replay_window, record.device, record.compute)
    qtbot.addWidget(box)
    text = box.text()
    for expected in (version("mlx"), version("mlx-lm"), qVersion(), "0.1.0"):
        assert expected in text
    assert replay_window.model_record.device in text
    assert "not known until a model is loaded" in about_text(None)
    # The compute path and the figures that chose it (the recording's own words).
    path, why = record.compute.split(": ", 1)
    assert f"<b>{path}</b>" in text and "measured" in why and why.split(";")[0] in text
    assert "not known until a local model is loaded" in about_text(None)
    assert "&lt;b&gt;" in about_text("x", "float32: <b>")  # escaped, never markup
