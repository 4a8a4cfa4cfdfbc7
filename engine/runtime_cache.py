"""Small JSON caches of what was measured on this machine (`runtime/` beside the
models): read with a fallback, written atomically; losing one only means measuring
again."""

from __future__ import annotations

import json
import os
from pathlib import Path


def runtime_dir() -> Path:
    """The folder of runtime measurements cached per machine (beside the models folder)."""
    from engine.paths import models_dir

    return models_dir().parent / "runtime"


def read_json(name: str) -> dict:
    """The cached JSON object `name`; {} if missing or unreadable."""
    try:
        data = json.loads((runtime_dir() / name).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(name: str, data: dict) -> None:
    """Cache `data` as `name` (replaced atomically; a failure is ignored)."""
    path = runtime_dir() / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{name}.{os.getpid()}.tmp")  # two processes may race here
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
    except OSError:
        pass  # a cache: measuring again next time is fine
