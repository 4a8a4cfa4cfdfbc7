"""File ▸ Quit ends the app: every window closes, every engine process stops and
the process exits, with Compare, Inside and the lab open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import app

SCRIPT = r"""
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

qapp = QApplication([])
from app.shell.window import PlaygroundWindow

win = PlaygroundWindow(load_on_start=False)
win.show()
compare, inside, lab = win.open_compare(), win.open_inside(), win.open_lab()
engines = [win.bridge.client, compare.bridge.client]
for client in engines:
    client._ensure_started()
print("PIDS", *[c.pid for c in engines], flush=True)
print("SHORTCUT", win.actions_["quit"].shortcut().toString(), flush=True)
windows = [win, compare, inside, lab]
QTimer.singleShot(100, win.actions_["quit"].trigger)
code = qapp.exec()
print("VISIBLE", sum(w.isVisible() for w in windows), flush=True)
print("ENGINES", sum(c.is_alive() for c in engines), flush=True)
sys.exit(code)
"""


def test_quit_closes_every_window_and_ends_the_process():
    root = Path(app.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=root,
        env=env,
        timeout=90,
        capture_output=True,
        text=True,
    )
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines["SHORTCUT"] == "Ctrl+Q"
    assert lines["VISIBLE"] == "0" and lines["ENGINES"] == "0"
    for pid in map(int, lines["PIDS"].split()):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"engine process {pid} outlived the app")
