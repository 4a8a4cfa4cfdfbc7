"""Opening files the desktop way: drag and drop onto a window, file arguments
(`logitscope-app FILE`, `python -m app FILE`), File ▸ Open Recent, and one Open
dialog that takes a .gguf file, an MLX model folder or a session export.

A `.gguf` file or a folder with a config.json is a model: it is loaded. A `.json`
export or a `.jsonl` session is a session: it is imported into History (validated
field by field by engine.sessions.session_import) and its last run is shown. A
`.txt` or `.md` file is a text: it is read through the model (Mode: Read a text).
Open Recent lists a model only once it loaded and a session only once imported.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Slot
from PySide6.QtWidgets import QWidget

from app.core import settings_store
from app.dialogs.open_dialog import kind_of

RECENT_KEYS = {"model": "recent/models", "session": "recent/sessions", "text": "recent/texts"}
RECENT_MAX = 8


def recent(kind: str) -> list[str]:
    """The recently opened models or sessions (newest first) that still exist."""
    value = settings_store.value(RECENT_KEYS[kind], []) or []
    items = [value] if isinstance(value, str) else list(value)
    return [p for p in items if Path(p).exists()]


def remember(kind: str, path: str) -> None:
    """Put `path` first in the recent list of its kind."""
    items = [str(Path(path))] + [p for p in recent(kind) if p != str(Path(path))]
    settings_store.set_value(RECENT_KEYS[kind], items[:RECENT_MAX])


class RecentOnLoad(QObject):
    """Remembers a model opened from a file once the engine has loaded it: a load that
    fails leaves Open Recent as it was. Loading is exclusive (the bridge is busy), so
    the next model announced, or the next failure, answers the load asked for."""

    def __init__(self, bridge, parent=None):
        super().__init__(parent)
        self.setObjectName(RECENT_ON_LOAD)
        self.pending: str | None = None
        bridge.model_loaded.connect(self._on_loaded)
        bridge.failed.connect(self._on_failed)

    def expect(self, path: str) -> None:
        self.pending = str(Path(path))

    @Slot(object)
    def _on_loaded(self, _record) -> None:
        if self.pending is not None:
            remember("model", self.pending)
            self.pending = None

    @Slot(object)
    def _on_failed(self, _record) -> None:
        self.pending = None


RECENT_ON_LOAD = "recentOnLoad"


def not_openable(path: str) -> str:
    """Why `path` cannot be opened, in one sentence."""
    p = Path(path)
    if p.is_dir():
        return (
            f"{p.name} is a folder without a config.json, so it is not an MLX model folder: "
            "drop the model's own folder (the one holding config.json and the weights), "
            "a .gguf file or a session export."
        )
    if not p.exists():
        return f"{path} does not exist."
    return (
        f"{p.name} is not a .gguf file, an MLX model folder, a session export or a text "
        "file (.txt, .md) to read."
    )


def import_session(history, path: str):
    """Import a .json export or a .jsonl session into History; the SessionLog or None."""
    if Path(path).suffix.lower() != ".jsonl":
        return history.import_from(path)
    from engine.sessions.export import to_json
    from engine.sessions.session_log import read_session

    try:
        session = read_session(Path(path))
    except OSError as e:
        history.message.emit(f"Cannot read {path}: {e.strerror or e}")
        return None
    with tempfile.TemporaryDirectory() as tmp:  # through the one validating importer
        as_json = Path(tmp) / (Path(path).stem + ".json")
        as_json.write_text(to_json(session), encoding="utf-8")
        return history.import_from(str(as_json))


def open_path(window, path: str) -> str | None:
    """Open `path` in the playground `window`: load a model or import and show a
    session. Returns its kind, or None (and says why) when it is neither."""
    kind = kind_of(path)
    if kind is None:
        window.show_error(not_openable(path))
        return None
    path = str(Path(path).resolve())
    if kind == "text":
        return read_file(window, path)
    if kind == "model":
        refused = window.bridge.busy  # load_model says why; nothing to remember
        window.picker.refresh(select=path)
        window.load_model(path)
        tracker = window.findChild(RecentOnLoad, RECENT_ON_LOAD)
        if tracker is not None and not refused:
            tracker.expect(path)
        return kind
    session = import_session(window.history, path)
    if session is None:  # History said why
        return None
    remember(kind, path)
    runs = session.visible_runs
    if runs:
        window.show_run(runs[-1])
    return kind


def read_file(window, path: str) -> str | None:
    """Read a text file through the model: its text in the prompt box, Mode set to Read
    a text, and the read started (when a model is loaded and nothing runs)."""
    from app.playground.read_flow import load_text
    from engine.errors import SettingsError

    if window.bridge.busy:
        window.show_error("Stop the current run before reading a text file.")
        return None
    try:
        text = load_text(path)
    except SettingsError as e:
        window.show_error(str(e))
        return None
    window.controls.set_reading(True)
    window.prompt.setPlainText(text)
    remember("text", path)
    if window.model_record is not None:
        window.run()
    return "text"


def ask_and_read(window) -> None:
    """File ▸ Read a text file…"""
    from app.dialogs.open_dialog import ask_text_path

    path = ask_text_path(window)
    if path:
        read_file(window, path)


def _paths(event) -> list[str]:
    mime = event.mimeData()
    if not mime.hasUrls():
        return []
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile()]


class DropFilter(QObject):
    """Accepts drags of models and sessions over a window and opens what is dropped."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window

    def eventFilter(self, obj, event):
        kind = event.type()
        if kind in (QEvent.DragEnter, QEvent.DragMove):
            paths = _paths(event)
            if any(kind_of(p) or Path(p).is_dir() for p in paths):
                event.acceptProposedAction()  # a folder is taken, to say why if refused
                return True
        elif kind == QEvent.Drop:
            dropped = _paths(event)
            paths = [p for p in dropped if kind_of(p)]
            if paths:
                event.acceptProposedAction()
                for p in paths[:1] + [p for p in paths[1:] if kind_of(p) == "session"]:
                    open_path(self.window, p)
                return True
            folders = [p for p in dropped if Path(p).is_dir()]
            if folders:  # not a model: the error banner says why
                event.acceptProposedAction()
                self.window.show_error(not_openable(folders[0]))
                return True
        return False


def accept_drops(window) -> DropFilter:
    """Let `window` (and its text boxes, which would paste a path) take dropped files."""
    drop = DropFilter(window)
    window.setAcceptDrops(True)
    window.installEventFilter(drop)
    for child in window.findChildren(QWidget):
        if child.acceptDrops():
            child.installEventFilter(drop)
    return drop


def model_arguments(paths: list[str]) -> bool:
    """Whether the command line names a model (then the remembered one is not loaded)."""
    return any(kind_of(p) == "model" for p in paths)


def open_arguments(window, paths: list[str]) -> list[str | None]:
    """Open every file named on the command line; their kinds (None: not openable).
    Sessions open first: a model still loading would keep a past run from showing."""
    order = sorted(range(len(paths)), key=lambda i: kind_of(paths[i]) == "model")
    kinds: dict[int, str | None] = {i: open_path(window, paths[i]) for i in order}
    return [kinds[i] for i in range(len(paths))]


def install(window) -> None:
    """Drops, the picker's Open dialog for sessions too, and File ▸ Open Recent."""
    from PySide6.QtGui import QAction, QKeySequence
    from PySide6.QtWidgets import QMenu

    accept_drops(window)  # the filter is the window's child: Qt keeps it alive
    tracker = RecentOnLoad(window.bridge, window)
    window.picker.session_chosen.connect(lambda p: open_path(window, p))
    window.picker.model_opened.connect(tracker.expect)
    file_menu = window.actions_["open"].parent()
    menu = QMenu("Open &Recent", file_menu)
    menu.setObjectName(RECENT_MENU)
    file_menu.insertMenu(window.actions_["server"], menu)
    menu.aboutToShow.connect(lambda: fill_recent(menu, window))
    read = QAction("&Read a text file…", file_menu)  # Mode: Read a text, on a file
    read.setShortcut(QKeySequence("Ctrl+Shift+T"))
    read.setStatusTip("Read a .txt or .md file through the model: every token's p and rank")
    read.triggered.connect(lambda: ask_and_read(window))
    file_menu.insertAction(window.actions_["server"], read)
    window.addAction(read)  # the shortcut works wherever the focus is


RECENT_MENU = "openRecentMenu"


def recent_menu_of(window):
    """The window's File ▸ Open Recent menu."""
    from PySide6.QtWidgets import QMenu

    return window.findChild(QMenu, RECENT_MENU)


def fill_recent(menu, window) -> None:
    """The Open Recent submenu: models, then sessions (paths in tooltips)."""
    menu.clear()
    for kind, title in (("model", "Models"), ("session", "Sessions"), ("text", "Texts read")):
        items = recent(kind)
        if items:
            menu.addSection(title)
        for path in items:
            act = menu.addAction(Path(path).name, lambda p=path: open_path(window, p))
            act.setToolTip(path)
    if menu.isEmpty():
        menu.addAction("Nothing opened yet").setEnabled(False)
