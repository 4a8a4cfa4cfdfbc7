"""`logitscope serve` on a port that is taken: one sentence naming --port, before any
model is loaded and without leaving an empty "Server" session in History."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from engine.errors import SettingsError
from engine.serve.server import ServeOptions, start
from engine.sessions.session_log import sessions_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def busy_port():
    """A port another program listens on, on 127.0.0.1."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def _in_use(port: int) -> str:
    return (
        f"port {port} on 127.0.0.1 is in use: another program (perhaps another logitscope "
        "serve) listens there; choose another with --port"
    )


def test_start_on_a_taken_port_says_so_and_journals_nothing(busy_port, default_model_path):
    before = sorted(sessions_dir().iterdir())
    with pytest.raises(SettingsError) as e:
        start(ServeOptions(model=str(default_model_path), port=busy_port))
    assert str(e.value) == _in_use(busy_port)
    assert sorted(sessions_dir().iterdir()) == before


def test_the_command_on_a_taken_port_prints_one_sentence_and_leaves_no_session(busy_port, tmp_path):
    env = dict(os.environ, LOGITSCOPE_DATA_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "engine", "serve", "--port", str(busy_port)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == f"logitscope: error: {_in_use(busy_port)}\n"
    assert done.stdout == ""
    sessions = tmp_path / "sessions"
    assert not sessions.exists() or list(sessions.iterdir()) == []


def test_an_address_not_of_this_machine_names_host(default_model_path):
    with pytest.raises(SettingsError) as e:
        start(ServeOptions(model=str(default_model_path), host="192.0.2.1", port=0, api_key="k"))
    assert str(e.value) == (
        "192.0.2.1 is not an address of this machine: give one of its addresses with "
        "--host (127.0.0.1: this machine only)"
    )
