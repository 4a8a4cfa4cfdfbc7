#!/usr/bin/env python3
"""Re-capture the replaying engine's recordings (tests/data/replay/) from the real model.

Runs every app test marked `replay` (those on the `replay_window` fixture) with
LOGITSCOPE_REPLAY=record: each runs on a fresh engine process with the real default
model, and what it asked and what the engine answered is written as its cassette.
Then tests/app/test_replay_recordings.py checks them against the engine again.

    .venv/bin/python scripts/capture_replay.py [pytest arguments, e.g. -k history]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(args: list[str]) -> int:
    env = {**os.environ, "LOGITSCOPE_REPLAY": "record", "QT_QPA_PLATFORM": "offscreen"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "replay", "tests/app", *args]
    print("+", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
