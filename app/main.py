"""Entry point of the desktop app."""

from __future__ import annotations

import multiprocessing
import sys


def main(argv: list[str] | None = None) -> int:
    multiprocessing.freeze_support()  # the frozen app starts its engine process
    from PySide6.QtWidgets import QApplication

    from app.window import PlaygroundWindow

    app = QApplication(sys.argv if argv is None else argv)
    app.setApplicationName("Logitscope")
    app.setOrganizationName("Logitscope")
    window = PlaygroundWindow()
    window.show()
    return app.exec()
