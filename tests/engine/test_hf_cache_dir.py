"""The Hugging Face cache folder is read from the environment as it is now, the way
huggingface_hub reads it once at its import: an engine forked from a server that
imported huggingface_hub earlier (engine/process/start_method.py) must not look in the
server's folder. Checked against huggingface_hub itself, imported afresh per case."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.models.hf_cache import hub_cache_dir

VARS = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"XDG_CACHE_HOME": "{tmp}/xdg"},
        {"HF_HOME": "{tmp}/hf", "XDG_CACHE_HOME": "{tmp}/xdg"},
        {"HF_HUB_CACHE": "{tmp}/hub", "HF_HOME": "{tmp}/hf"},
        {"HUGGINGFACE_HUB_CACHE": "{tmp}/legacy", "HF_HOME": "{tmp}/hf"},
    ],
    ids=["home", "xdg", "hf_home", "hub_cache", "legacy_name"],
)
def test_the_cache_folder_is_huggingface_hubs_for_the_environment_now(tmp_path, monkeypatch, env):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value.format(tmp=tmp_path))
    theirs = subprocess.run(
        [sys.executable, "-c", "import huggingface_hub.constants as c; print(c.HF_HUB_CACHE)"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert theirs.returncode == 0, theirs.stderr[-1000:]
    assert hub_cache_dir() == theirs.stdout.strip()
