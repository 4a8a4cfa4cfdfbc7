from importlib.metadata import version

from PySide6.QtCore import qVersion

from app.dialogs.about import about_text, show_about


def test_about_box_names_every_version_and_the_device(qtbot, replay_window):
    box = show_about(replay_window, replay_window.model_record.device)
    qtbot.addWidget(box)
    text = box.text()
    for expected in (version("mlx"), version("mlx-lm"), qVersion(), "0.1.0"):
        assert expected in text
    assert replay_window.model_record.device in text
    assert "not known until a model is loaded" in about_text(None)
