"""Where Logitscope keeps its data: the platform's user data directory.

`LOGITSCOPE_DATA_DIR` overrides the whole data directory and
`LOGITSCOPE_MODELS_DIR` only the models folder (tests share one converted model
across temporary data directories this way).
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "Logitscope"


def data_dir() -> Path:
    """The user data directory (created on first use)."""
    env = os.environ.get("LOGITSCOPE_DATA_DIR")
    if env:
        path = Path(env)
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def models_dir() -> Path:
    """Folder holding converted models, one sub-folder each."""
    env = os.environ.get("LOGITSCOPE_MODELS_DIR")
    path = Path(env) if env else data_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def downloads_dir() -> Path:
    path = data_dir() / "downloads"
    path.mkdir(parents=True, exist_ok=True)
    return path
