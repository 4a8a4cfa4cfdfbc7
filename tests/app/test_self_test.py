"""`python -m app --self-test`: what the packaged app's self-test runs, from source."""

import os
import subprocess
import sys


def test_self_test_loads_the_model_and_generates(default_model_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    p = subprocess.run(
        [sys.executable, "-m", "app", "--self-test"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "self-test passed" in p.stdout and "Paris" in p.stdout
