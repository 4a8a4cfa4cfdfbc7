"""The About box: versions of the app, MLX, mlx-lm and Qt, and the device in use."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion
from PySide6.QtWidgets import QMessageBox

from engine import __version__ as app_version


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def about_text(device: str | None) -> str:
    rows = (
        ("Logitscope", app_version),
        ("MLX", package_version("mlx")),
        ("mlx-lm", package_version("mlx-lm")),
        ("Qt", f"{qVersion()} (PySide6 {pyside_version})"),
        ("Device", device or "not known until a model is loaded"),
    )
    table = "".join(f"<tr><td><b>{k}</b></td><td>&nbsp;{v}</td></tr>" for k, v in rows)
    return (
        "<h3>Logitscope</h3><p>A playground that makes LLM inference visible.</p>"
        f"<table>{table}</table>"
    )


def show_about(parent, device: str | None) -> QMessageBox:
    box = QMessageBox(parent)
    box.setWindowTitle("About Logitscope")
    box.setTextFormat(box.textFormat().RichText)
    box.setText(about_text(device))
    box.open()
    return box
