"""`python -m app --self-test`: what the packaged app's self-test runs, from source."""

import os
import subprocess
import sys


def test_self_test_loads_the_model_and_generates(default_model_path, gemma_path):
    from app.core import settings_store

    # whatever the person left on (Right-sized escalating every answer to another model),
    # the self-test's answer is the default model's own
    settings_store.set_value("right_size/on", "true")
    settings_store.set_value("right_size/large", str(gemma_path))
    settings_store.set_value("right_size/threshold", "1.0")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    p = subprocess.run(
        [sys.executable, "-m", "app", "--self-test"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    settings_store.set_value("right_size/on", "false")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "self-test passed" in p.stdout and "Paris" in p.stdout
