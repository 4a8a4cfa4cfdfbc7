"""Remembered choices the engine bridge needs at load time (the CPU compute preference)."""

from __future__ import annotations

from app.core import settings_store
from engine.run.settings import COMPUTE_PREFERENCES
from engine.store import environment


def default_compute_preference() -> str:
    """What the picker starts on before a person chooses: LOGITSCOPE_COMPUTE when it
    names a preference (a pin for the whole app, as the engine reads it), else auto."""
    pinned = environment.text("LOGITSCOPE_COMPUTE")
    return pinned if pinned in COMPUTE_PREFERENCES else "auto"


def compute_preference() -> str:
    """auto | speed | memory: how a local quantized model runs on the CPU (remembered)."""
    default = default_compute_preference()
    value = settings_store.value("model/prefer", default)
    return value if value in COMPUTE_PREFERENCES else default


def set_compute_preference(value: str) -> None:
    settings_store.set_value("model/prefer", value)
