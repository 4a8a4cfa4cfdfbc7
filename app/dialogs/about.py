"""The About box: versions of the app, MLX, mlx-lm and Qt, the device in use and how the
loaded model runs on it (the compute path, with the figures that chose it)."""

from __future__ import annotations

from html import escape
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


def compute_words(compute: str | None) -> str:
    """The model record's compute ("path: why") as HTML, the path in bold."""
    if not compute:
        return "not known until a local model is loaded"
    path, _, why = compute.partition(": ")
    return f"<b>{escape(path)}</b>" + (f": {escape(why)}" if why else "")


def about_text(device: str | None, compute: str | None = None) -> str:
    """The box's rich text: every version, the device and the compute path."""
    rows = (
        ("Logitscope", app_version),
        ("MLX", package_version("mlx")),
        ("mlx-lm", package_version("mlx-lm")),
        ("Qt", f"{qVersion()} (PySide6 {pyside_version})"),
        ("Device", escape(device) if device else "not known until a model is loaded"),
        ("Compute path", compute_words(compute)),
    )
    table = "".join(f"<tr><td valign='top'><b>{k}</b></td><td>&nbsp;{v}</td></tr>" for k, v in rows)
    return (
        "<h3>Logitscope</h3><p>A playground that makes LLM inference visible.</p>"
        f"<table>{table}</table>"
    )


def show_about(parent, device: str | None, compute: str | None = None) -> QMessageBox:
    """Open the About box (not modal) for the device and the loaded model's compute path."""
    box = QMessageBox(parent)
    box.setWindowTitle("About Logitscope")
    box.setTextFormat(box.textFormat().RichText)
    box.setText(about_text(device, compute))
    box.open()
    return box
