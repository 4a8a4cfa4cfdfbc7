"""Ctrl-C on a command that runs the engine (issue 57 item 4): the first one cancels the
run as the window's Stop does; the run is journaled "cancelled" with what it had, the
command exits 130, and nothing prints a traceback (the engine process ignores SIGINT)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine.sessions.journal import list_sessions

ROOT = Path(__file__).resolve().parents[2]
LONG = "Write a long story about a lighthouse keeper and the sea, in many chapters."


def sigint_as_at_a_terminal() -> None:
    """In the child before it runs: Ctrl-C's default action, as a terminal gives it. A
    test runner started in the background (`cmd &` in a script) hands its children
    SIGINT ignored, and Python then never turns it into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted(args: list[str], data: Path, ready) -> tuple[int, str]:
    """Run `logitscope ARGS` in its own process group, press Ctrl-C (SIGINT to the whole
    group, as a terminal does) once `ready(stdout, stderr)` holds; (status, stderr)."""
    env = {**os.environ, "LOGITSCOPE_DATA_DIR": str(data)}
    p = subprocess.Popen(
        [sys.executable, "-u", "-m", "engine", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=sigint_as_at_a_terminal,
    )
    os.set_blocking(p.stdout.fileno(), False)
    os.set_blocking(p.stderr.fileno(), False)
    out, err, deadline = b"", b"", time.monotonic() + 240
    while not ready(out, err) and p.poll() is None and time.monotonic() < deadline:
        out += p.stdout.read() or b""
        err += p.stderr.read() or b""
        time.sleep(0.05)
    assert p.poll() is None, (out + err).decode(errors="replace")  # still running: not too short
    os.killpg(p.pid, signal.SIGINT)
    rest_out, rest_err = p.communicate(timeout=120)
    return p.returncode, (err + rest_err).decode(errors="replace")


def _last_run(data: Path):
    sessions, _problems = list_sessions(data / "sessions")
    runs = [r for s in sessions for r in s.runs]
    assert runs, "nothing was journaled"
    return max(runs, key=lambda r: r.started)


def test_ctrl_c_on_generate_cancels_and_journals_it(tmp_path, default_model_path):
    args = ["generate", "--model", str(default_model_path), "--prompt", LONG]
    status, err = _interrupted(
        [*args, "--max-tokens", "400", "--temp", "0"], tmp_path, lambda out, _err: len(out) > 20
    )
    assert status == 130 and "Traceback" not in err, err
    assert "cancelled (Ctrl-C)" in err and "KeyboardInterrupt" not in err
    run = _last_run(tmp_path)
    assert run.done is not None and run.done.finish_reason == "cancelled"
    assert 0 < len(run.tokens) < 400  # what it had, kept


def test_ctrl_c_on_read_cancels_and_journals_it(tmp_path, default_model_path):
    text = tmp_path / "long.txt"
    text.write_text(" ".join(["The keeper climbed the stairs to light the lamp."] * 400))
    args = ["read", str(text), "--model", str(default_model_path), "--chunk", "16"]
    status, err = _interrupted(args, tmp_path, lambda _out, err: b"read " in err)
    assert status == 130 and "Traceback" not in err, err
    run = _last_run(tmp_path)
    assert run.done is not None and run.done.finish_reason == "cancelled"
