"""Tests are blind to the machine they run on (issue 56 item 5): a test session measures
in a runtime/ folder of its own, which the commands and engine processes it starts
inherit, never the developer's beside the models."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.store.paths import models_dir
from engine.store.runtime_cache import RUNTIME_ENV, runtime_dir

ROOT = Path(__file__).resolve().parents[2]


def test_the_session_measures_in_a_runtime_folder_of_its_own():
    mine = runtime_dir()
    assert mine != models_dir().parent / "runtime"
    assert Path(tempfile.gettempdir()) in mine.parents and os.environ[RUNTIME_ENV] == str(mine)
    code = "from engine.store.runtime_cache import runtime_dir; print(runtime_dir())"
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert child.stdout.strip() == str(mine)  # the commands a test starts share it
    env = {k: v for k, v in os.environ.items() if k != RUNTIME_ENV}
    real = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert real.stdout.strip() == str(models_dir().parent / "runtime")  # the app's own
