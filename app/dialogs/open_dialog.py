"""What Logitscope can open (a .gguf file, an MLX model folder, a session export) and
the one Open dialog that takes any of them."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

SESSION_SUFFIXES = (".json", ".jsonl")
OPEN_FILTER = "Models and sessions (*.gguf *.json *.jsonl);;All files (*)"


TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text", ".rst")  # read through the model


def kind_of(path: str | Path) -> str | None:
    """'model', 'session', 'text' (a file to read), or None for a path Logitscope
    cannot open."""
    p = Path(path)
    if p.is_dir():
        return "model" if (p / "config.json").is_file() else None
    if p.is_file() and p.suffix.lower() == ".gguf":
        return "model"
    if p.is_file() and p.suffix.lower() in SESSION_SUFFIXES:
        return "session"
    if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES:
        return "text"
    return None


def ask_text_path(parent: QWidget | None) -> str | None:
    """Choose a text file to read through the model (any file may be tried)."""
    patterns = " ".join(f"*{s}" for s in TEXT_SUFFIXES)
    path, _ = QFileDialog.getOpenFileName(
        parent, "Read a text file", "", f"Text files ({patterns});;All files (*)"
    )
    return path or None


def ask_open_path(parent: QWidget | None) -> str | None:
    """One dialog for a .gguf file, a session export or an MLX model folder (select the
    folder, or a file inside it). Cancelling opens nothing else."""
    dialog = QFileDialog(parent, "Open a .gguf, a session, or any file in an MLX model folder")
    dialog.setFileMode(QFileDialog.ExistingFile)
    dialog.setOption(QFileDialog.DontUseNativeDialog, True)  # files and folders in one
    dialog.setNameFilter(OPEN_FILTER)
    if not dialog.exec():
        return None
    chosen = dialog.selectedFiles()[0] if dialog.selectedFiles() else ""
    if chosen and kind_of(chosen) is None and kind_of(Path(chosen).parent) == "model":
        chosen = str(Path(chosen).parent)  # a file inside an MLX folder: the folder
    if not chosen and dialog.directory().exists():
        chosen = dialog.directory().absolutePath()
    return chosen or None
