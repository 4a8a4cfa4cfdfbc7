"""Where the Hugging Face cache is, as set now: one definition for discovery, the hub
client and the loader (no other import from engine.models, so none of them cycles)."""

from __future__ import annotations

import os
from pathlib import Path


def hf_cache_root() -> Path:
    """The Hugging Face hub cache as set now ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache)."""
    env = os.environ.get("HF_HUB_CACHE")
    if env:
        return Path(env).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    return Path(os.environ.get("HOME") or Path.home()) / ".cache" / "huggingface" / "hub"
