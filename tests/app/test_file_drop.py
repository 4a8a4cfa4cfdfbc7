"""Files the desktop way: drops of each kind, file arguments, Open Recent."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import QEvent, QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from app.core.bridge import EngineBridge
from app.shell import file_drop
from app.shell.window import PlaygroundWindow
from engine.run.settings import SamplingSettings
from engine.sessions.export import to_json, to_jsonl
from engine.sessions.journal import Journal
from engine.sessions.session_log import read_session
from tests.app.conftest import LOAD_MS


@pytest.fixture
def playground(qtbot, engine_client):
    from engine.store.paths import data_dir

    (data_dir() / "settings.ini").unlink(missing_ok=True)
    win = PlaygroundWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False), load_on_start=False
    )
    qtbot.addWidget(win)
    win.show()
    yield win
    win.cleanup()


@pytest.fixture
def exports(tmp_path):
    """A session of one run, exported as .json and .jsonl."""
    (tmp_path / "journal").mkdir()
    journal = Journal.create(tmp_path / "journal")
    journal.start_run("dropped prompt", SamplingSettings().to_dict(), None)
    journal.close()
    session = read_session(journal.path)
    (tmp_path / "s.json").write_text(to_json(session), encoding="utf-8")
    (tmp_path / "s.jsonl").write_text(to_jsonl(session), encoding="utf-8")
    return tmp_path / "s.json", tmp_path / "s.jsonl"


def _drop(widget, path) -> bool:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(
        widget.rect().center(), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier
    )
    QApplication.sendEvent(widget, enter)
    if not enter.isAccepted():
        return False
    drop = QDropEvent(
        QPointF(widget.rect().center()),
        Qt.CopyAction,
        mime,
        Qt.LeftButton,
        Qt.NoModifier,
        QEvent.Drop,
    )
    QApplication.sendEvent(widget, drop)
    return drop.isAccepted()  # fmt: skip


def test_drops_of_each_kind(qtbot, playground, exports, default_model_path, tmp_path, monkeypatch):
    loaded = []
    monkeypatch.setattr(playground, "load_model", loaded.append)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    prompt = playground.prompt.toPlainText()
    assert _drop(playground, default_model_path)  # an MLX folder
    assert _drop(playground.prompt.viewport(), gguf)  # onto the prompt: opened, not pasted
    assert loaded == [str(default_model_path.resolve()), str(gguf.resolve())]
    assert playground.prompt.toPlainText() == prompt
    for export in exports:
        before = len(playground.history.sessions)
        assert _drop(playground, export)
        assert playground.state.prompt == "dropped prompt"
        assert len(playground.history.sessions) >= max(before, 1)
    other = tmp_path / "notes.bin"
    other.write_text("hi")
    assert not _drop(playground, other)
    text = tmp_path / "notes.txt"  # a text: read through the model (no model loaded here)
    text.write_text("A dropped text to read.")
    assert _drop(playground, text)
    assert playground.controls.reading()
    assert playground.prompt.toPlainText() == "A dropped text to read."
    assert file_drop.recent("model") == []  # none loaded (load_model is a stand-in)
    assert file_drop.recent("session")[0] == str(exports[1].resolve())
    menu = file_drop.recent_menu_of(playground)
    file_drop.fill_recent(menu, playground)
    names = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert "s.jsonl" in names and "model.gguf" not in names


def test_open_recent_keeps_only_what_opened(qtbot, playground, tiny_model_dir, tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF not really")
    with qtbot.waitSignal(playground.bridge.failed, timeout=LOAD_MS):
        assert file_drop.open_path(playground, str(bad)) == "model"
    qtbot.waitUntil(lambda: not playground.bridge.busy, timeout=LOAD_MS)
    broken_export = tmp_path / "broken.json"
    broken_export.write_text("{not json", encoding="utf-8")
    assert file_drop.open_path(playground, str(broken_export)) is None
    assert file_drop.recent("model") == [] and file_drop.recent("session") == []
    with qtbot.waitSignal(playground.bridge.model_loaded, timeout=LOAD_MS):
        file_drop.open_path(playground, str(tiny_model_dir))
    assert file_drop.recent("model") == [str(tiny_model_dir.resolve())]


def test_a_dropped_folder_that_is_no_model_says_why(qtbot, playground, tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"jpg")
    assert _drop(playground, folder)
    assert playground.banner.isVisibleTo(playground)
    text = playground.banner.text()
    assert "photos is a folder without a config.json" in text, text
    assert file_drop.recent("model") == []


def test_file_arguments_open_a_model_and_a_session(
    qtbot, playground, exports, default_model_path, tmp_path
):
    folder = tmp_path / "copy-of-default"
    shutil.copytree(default_model_path, folder)
    assert file_drop.model_arguments([str(folder), str(exports[0])])
    kinds = file_drop.open_arguments(playground, [str(folder), str(exports[0])])
    assert kinds == ["model", "session"]
    assert playground.state.prompt == "dropped prompt"
    qtbot.waitUntil(
        lambda: playground.model_record is not None and not playground.bridge.busy, timeout=LOAD_MS
    )
    assert playground.model_record.path == str(folder.resolve())
    assert playground.picker.current() == str(folder.resolve())  # fmt: skip
