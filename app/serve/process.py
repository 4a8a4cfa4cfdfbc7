"""`python -m engine serve …` as a child process of the window.

The server loads its own copy of the model (the window's engine process stays as
it is) and journals every request into the same data folder, so History lists them.
It says on stderr when it listens (`listening on http://HOST:PORT/v1`): that line
makes it ready. When it exits unasked, its last line says why (a port taken, a bad
model). The API key never passes through here: only the name of the environment
variable holding it (`--api-key-env`), which the child inherits.
"""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

LISTENING = re.compile(r"listening on (http://\S+/v1)")
STOP_WAIT_MS = 5000  # after SIGTERM, the server's graceful shutdown, then a kill
ROOT = Path(__file__).resolve().parents[2]  # holds the `engine` package


def serve_command(model: str, host: str, port: int, key_env: str | None) -> list[str]:
    """The arguments after the Python interpreter (after the frozen app's own binary:
    `--run-cli`, app/main.py, in place of `-m engine`)."""
    head = ["--run-cli"] if getattr(sys, "frozen", False) else ["-m", "engine"]
    args = [*head, "serve", "--model", model, "--host", host, "--port", str(port)]
    return args + (["--api-key-env", key_env] if key_env else [])


def port_taken(host: str, port: int) -> bool:
    """Whether another program listens on `host:port` already (port 0 never is)."""
    if port == 0:
        return False
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


class ServeProcess(QObject):
    """One `logitscope serve` child: `start`, then `ready(url)` or `stopped(why)`."""

    ready = Signal(str)  # the base URL, http://HOST:PORT/v1
    said = Signal(str)  # a line of its output before it is ready (loading…)
    stopped = Signal(str)  # why it ended, in words ("" when it was asked to stop)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.proc: QProcess | None = None
        self.url: str | None = None
        self.last_line = ""
        self._asked = False
        self._partial = ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.state() != QProcess.NotRunning

    def start(self, model: str, host: str, port: int, key_env: str | None) -> None:
        """Start serving `model` (a local model's path) on `host:port`."""
        self.stop(wait=True)
        proc = QProcess(self)
        env = QProcessEnvironment.systemEnvironment()
        path = env.value("PYTHONPATH", "")
        env.insert("PYTHONPATH", str(ROOT) + (f":{path}" if path else ""))
        proc.setProcessEnvironment(env)
        proc.setProcessChannelMode(QProcess.MergedChannels)
        proc.readyReadStandardOutput.connect(lambda: self._read(proc))
        proc.finished.connect(lambda code, _status: self._on_finished(proc, code))
        proc.errorOccurred.connect(lambda error: self._on_error(proc, error))
        self.proc, self.url, self.last_line, self._asked = proc, None, "", False
        proc.start(sys.executable, serve_command(model, host, port, key_env))

    def stop(self, wait: bool = False) -> None:
        """Ask the server to stop (SIGTERM: it ends its requests), killing it if it has
        not after STOP_WAIT_MS; `wait`: block until it has ended (quitting)."""
        proc = self.proc
        if proc is None or proc.state() == QProcess.NotRunning:
            return
        self._asked = True
        proc.terminate()
        if wait:
            if not proc.waitForFinished(STOP_WAIT_MS):
                proc.kill()
                proc.waitForFinished(STOP_WAIT_MS)
        else:
            QTimer.singleShot(STOP_WAIT_MS, lambda: self._kill_if_running(proc))

    @staticmethod
    def _kill_if_running(proc: QProcess) -> None:
        import shiboken6

        # The window (and the process object with it) may be gone by then: nothing to do.
        if shiboken6.isValid(proc) and proc.state() != QProcess.NotRunning:
            proc.kill()

    def _read(self, proc: QProcess) -> None:
        if proc is not self.proc:  # an earlier server's last words
            return
        text = self._partial + bytes(proc.readAllStandardOutput()).decode("utf-8", "replace")
        *lines, self._partial = text.split("\n")
        for line in (ln.strip() for ln in lines):
            if not line:
                continue
            self.last_line = line
            m = LISTENING.search(line)
            if m and self.url is None:
                self.url = m.group(1)
                self.ready.emit(self.url)
            elif self.url is None:
                self.said.emit(line)

    def _on_finished(self, proc: QProcess, code: int) -> None:
        if proc is not self.proc:
            return
        self._read(proc)
        if self._partial.strip():
            self.last_line = self._partial.strip()
        self.url = None
        if self._asked:
            self.stopped.emit("")
        else:
            why = self.last_line or "it said nothing"
            self.stopped.emit(f"The server stopped (exit code {code}): {why}")

    def _on_error(self, proc: QProcess, error) -> None:
        if proc is self.proc and error == QProcess.FailedToStart:
            self.stopped.emit(f"The server could not start: {proc.errorString()}")
