"""Where Logitscope keeps its data: the platform's user data directory.

`LOGITSCOPE_DATA_DIR` overrides the whole data directory and
`LOGITSCOPE_MODELS_DIR` only the models folder (tests share one converted model
across temporary data directories this way).
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import LogitscopeError
from engine.store import environment

APP_NAME = "Logitscope"


class DataDirError(LogitscopeError):
    """A data folder cannot be created or used; the message says which and what to do."""


def _ensure_folder(path: Path, what: str, env: str) -> Path:
    if path.exists() and not path.is_dir():
        raise DataDirError(f"the {what} {path} is a file, not a folder; set {env} to a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from engine.store.atomic import describe_os_error

        why = describe_os_error(e, path).removeprefix(f"could not write {path}: ")
        raise DataDirError(
            f"the {what} {path} cannot be used ({why}); set {env} to a folder you can write to"
        ) from e
    if not path.is_dir():
        raise DataDirError(f"the {what} {path} is a file, not a folder; set {env} to a folder")
    return path


def data_dir() -> Path:
    """The user data directory (created on first use)."""
    env = environment.text("LOGITSCOPE_DATA_DIR")
    if env:
        path = Path(env)
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir(APP_NAME, appauthor=False))
    return _ensure_folder(path, "data folder", "LOGITSCOPE_DATA_DIR")


def models_dir() -> Path:
    """Folder holding converted models, one sub-folder each."""
    env = environment.text("LOGITSCOPE_MODELS_DIR")
    path = Path(env) if env else data_dir() / "models"
    return _ensure_folder(path, "models folder", "LOGITSCOPE_MODELS_DIR")


def downloads_dir() -> Path:
    """The downloads folder (created on first use); DataDirError if it cannot be."""
    return _ensure_folder(data_dir() / "downloads", "downloads folder", "LOGITSCOPE_DATA_DIR")
