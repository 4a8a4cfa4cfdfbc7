"""The Server menu: Serve on port…, Stop serving, Copy base URL, Follow requests.

ServeMenu owns the server's child process (process.py), the follower (follow.py) and
a status-bar note ("Serving SmolLM2 on http://127.0.0.1:8080/v1"). It serves the
model the window has loaded (a local one: a server's model is served already). A
port already taken, or a server that exits, is said in one sentence with its last
line. `cleanup()` stops both (the window calls it when it closes, so quitting ends
the server too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QLabel

from app.serve.dialog import ServeChoice, ServeDialog
from app.serve.follow import Following, FollowUi
from app.serve.process import ServeProcess, port_taken


@dataclass(frozen=True)
class ServeUi:
    """The window's pieces the menu uses (it never reaches into the window itself)."""

    parent: object  # the dialog's parent widget
    model: object  # the SessionSignals of the playground
    status_bar: object
    notice: Callable[[str], None]
    error: Callable[[str], None]
    follow: FollowUi


def _add(menu, text: str, slot, tip: str, checkable: bool = False) -> QAction:
    action = QAction(text, menu)
    action.setStatusTip(tip)
    action.setCheckable(checkable)
    (action.toggled if checkable else action.triggered).connect(slot)
    menu.addAction(action)
    return action


class ServeMenu(QObject):
    """The Server menu and what it starts (see the module's docstring)."""

    def __init__(self, bar, ui: ServeUi, parent=None):
        super().__init__(parent)
        self.ui, self.session = ui, ui.model.session
        self.process = ServeProcess(self)
        self.following = Following(ui.model, ui.follow, self)
        self.choice: ServeChoice | None = None
        self.dialog: ServeDialog | None = None
        self.served_name = ""
        self.note = QLabel()
        self.note.setObjectName("serveNote")
        self.note.hide()
        ui.status_bar.addPermanentWidget(self.note)
        self.menu = menu = self._insert_menu(bar)
        self.actions = {
            "serve": _add(menu, "&Serve on port…", self.open_dialog,
                          "Serve the loaded model over an OpenAI-compatible API"),
            "stop": _add(menu, "S&top serving", self.stop, "Stop the server"),
            "copy": _add(menu, "&Copy base URL", self.copy_url,
                         "Copy the server's base URL (…/v1) for a client"),
            "follow": _add(menu, "&Follow requests", self.set_follow,
                           "Show each request the server answers live in the playground",
                           checkable=True),
        }  # fmt: skip
        self.process.ready.connect(self._on_ready)
        self.process.said.connect(lambda line: self._set_note(f"Server: {line[:80]}"))
        self.process.stopped.connect(self._on_stopped)
        self._enable()

    @staticmethod
    def _insert_menu(bar):
        """A Server menu before the Window menu (at the end if there is none)."""
        before = next((a for a in bar.actions() if a.text() == "&Window"), None)
        if before is None:
            return bar.addMenu("Ser&ver")
        from PySide6.QtWidgets import QMenu

        menu = QMenu("Ser&ver", bar)
        bar.insertMenu(before, menu)
        return menu

    @property
    def url(self) -> str | None:
        """The base URL clients use, once the server listens."""
        return self.process.url

    def _enable(self) -> None:
        running = self.process.running
        self.actions["serve"].setEnabled(not running)
        self.actions["stop"].setEnabled(running)
        self.actions["copy"].setEnabled(self.url is not None)

    def _set_note(self, text: str) -> None:
        self.note.setText(text)
        self.note.setVisible(bool(text))

    # -- serving -------------------------------------------------------------------------
    def open_dialog(self) -> ServeDialog | None:
        """Serve on port…: the dialog (not modal to the app: OK starts the server)."""
        record = self.session.model
        if record is None or record.backend != "mlx":
            self.ui.error(
                "Load a local model to serve it: Serve on port… serves the model "
                "loaded in this window (a server's model is served already)."
            )
            return None
        self.dialog = ServeDialog(record.name, parent=self.ui.parent)
        self.dialog.accepted.connect(lambda d=self.dialog: self.start(d.choice()))
        self.dialog.open()
        return self.dialog

    def start(self, choice: ServeChoice) -> bool:
        """Start serving the loaded model as `choice` says; False if it cannot."""
        record = self.session.model
        if record is None or self.process.running:
            return False
        if port_taken(choice.host, choice.port):
            self.ui.error(
                f"Port {choice.port} on {choice.host} is taken by another program: choose "
                "another port in Server ▸ Serve on port… (0: any free port)."
            )
            return False
        self.choice, self.served_name = choice, record.name
        self.process.start(record.path, choice.host, choice.port, choice.key_env)
        self._set_note(f"Starting the server for {record.name}…")
        self._enable()
        return True

    def stop(self) -> None:
        """Stop serving (and following)."""
        self.following.stop()
        self.process.stop()

    def copy_url(self) -> None:
        if self.url:
            QGuiApplication.clipboard().setText(self.url)
            self.ui.notice(f"Copied {self.url}")

    def _on_ready(self, url: str) -> None:
        self.ui.notice(f"Serving {self.served_name} on {url}: every request is journaled")
        self._enable()
        self.set_follow(self.actions["follow"].isChecked())

    def _on_stopped(self, why: str) -> None:
        self.following.stop()
        self._set_note("")
        self._enable()
        if why:
            self.ui.error(why)
        else:
            self.ui.notice("Stopped serving")

    # -- following -----------------------------------------------------------------------
    def set_follow(self, on: bool) -> None:
        """Follow requests on or off (on before serving: it starts once the server does)."""
        if not on:
            self.following.stop()
        elif self.url is not None:
            self.following.start(self.url, self.choice.api_key() if self.choice else None)
        if self.url is not None:
            extra = " · following requests" if on else ""
            self._set_note(f"Serving {self.served_name} on {self.url}{extra}")

    def cleanup(self) -> None:
        """Stop following and the server, waiting for it to end (the window closes)."""
        self.following.stop()
        self.process.stop(wait=True)
