"""The app starts its engine process first, before Qt and the window are imported and
built, so that MLX is imported on the other core meanwhile (scripts/bench_startup.py
measures the effect; BENCHMARKS.md has the figures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START = """
import sys
from app.main import start_engine
client = start_engine()
print(client.is_alive(), client.pid is not None, "PySide6" in sys.modules)
client.close()
"""


def test_start_engine_runs_the_engine_before_qt_is_imported():
    out = subprocess.run(
        [sys.executable, "-c", START], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "False"]
