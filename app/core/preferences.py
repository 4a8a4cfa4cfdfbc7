"""Remembered choices the engine bridge needs at load time (the CPU compute preference)."""

from __future__ import annotations

from app.core import settings_store
from engine.settings import COMPUTE_PREFERENCES


def compute_preference() -> str:
    """auto | speed | memory: how a local quantized model runs on the CPU (remembered)."""
    value = settings_store.value("model/prefer", "auto")
    return value if value in COMPUTE_PREFERENCES else "auto"


def set_compute_preference(value: str) -> None:
    settings_store.set_value("model/prefer", value)
