"""Opening files the desktop way: drag and drop onto a window, file arguments
(`logitscope-app FILE`, `python -m app FILE`), File ▸ Open Recent, and one Open
dialog that takes a .gguf file, an MLX model folder or a session export.

A `.gguf` file or a folder with a config.json is a model: it is loaded. A `.json`
export or a `.jsonl` session is a session: it is imported into History (validated
field by field by engine.sessions.session_import) and its last run is shown.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget

from app.core import settings_store
from app.dialogs.open_dialog import kind_of

RECENT_KEYS = {"model": "recent/models", "session": "recent/sessions"}
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
        window.show_error(f"{path} is not a .gguf file, an MLX model folder or a session export.")
        return None
    path = str(Path(path).resolve())
    if kind == "model":
        window.picker.refresh(select=path)
        window.load_model(path)
    else:
        session = import_session(window.history, path)
        if session is None:
            return None
        runs = session.visible_runs
        if runs:
            window.show_run(runs[-1])
    remember(kind, path)
    return kind


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
            if any(kind_of(p) for p in _paths(event)):
                event.acceptProposedAction()
                return True
        elif kind == QEvent.Drop:
            paths = [p for p in _paths(event) if kind_of(p)]
            if paths:
                event.acceptProposedAction()
                for p in paths[:1] + [p for p in paths[1:] if kind_of(p) == "session"]:
                    open_path(self.window, p)
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
    from PySide6.QtWidgets import QMenu

    accept_drops(window)  # the filter is the window's child: Qt keeps it alive
    window.picker.session_chosen.connect(lambda p: open_path(window, p))
    window.picker.model_opened.connect(lambda p: remember("model", p))
    file_menu = window.actions_["open"].parent()
    menu = QMenu("Open &Recent", file_menu)
    menu.setObjectName(RECENT_MENU)
    file_menu.insertMenu(window.actions_["server"], menu)
    menu.aboutToShow.connect(lambda: fill_recent(menu, window))


RECENT_MENU = "openRecentMenu"


def recent_menu_of(window):
    """The window's File ▸ Open Recent menu."""
    from PySide6.QtWidgets import QMenu

    return window.findChild(QMenu, RECENT_MENU)


def fill_recent(menu, window) -> None:
    """The Open Recent submenu: models, then sessions (paths in tooltips)."""
    menu.clear()
    for kind, title in (("model", "Models"), ("session", "Sessions")):
        items = recent(kind)
        if items:
            menu.addSection(title)
        for path in items:
            act = menu.addAction(Path(path).name, lambda p=path: open_path(window, p))
            act.setToolTip(path)
    if menu.isEmpty():
        menu.addAction("Nothing opened yet").setEnabled(False)
