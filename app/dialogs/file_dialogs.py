"""Export and import file dialogs with the usual desktop manners.

Export suggests a name in the user's documents folder (or the folder used last),
appends the chosen format's extension *before* checking for an existing file,
and asks before replacing one. Import starts in the folder used last.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from app.core import settings_store
from engine.sessions.export import FORMATS

FILTERS = {
    "html": "HTML report (*.html)",
    "json": "JSON, everything (*.json)",
    "jsonl": "JSON Lines (*.jsonl)",
    "csv": "CSV, one row per token (*.csv)",
    "md": "Markdown transcript (*.md)",
}
LAST_DIR_KEY = "dialogs/last_folder"


def default_folder() -> str:
    last = settings_store.value(LAST_DIR_KEY)
    if last and Path(last).is_dir():
        return str(last)
    docs = QStandardPaths.writableLocation(QStandardPaths.DocumentsLocation)
    return docs if docs and Path(docs).is_dir() else str(Path.home())


def remember_folder(path: str) -> None:
    settings_store.set_value(LAST_DIR_KEY, str(Path(path).parent))


def with_extension(path: str, fmt: str) -> str:
    return path if path.lower().endswith("." + fmt) else f"{path}.{fmt}"


def confirm_replace(parent: QWidget | None, path: str) -> bool:
    answer = QMessageBox.question(
        parent,
        "Replace file?",
        f"{Path(path).name} already exists in {Path(path).parent}.\n\nReplace it?",
        QMessageBox.Yes | QMessageBox.Cancel,
        QMessageBox.Cancel,
    )
    return answer == QMessageBox.Yes


def ask_export_path(parent: QWidget | None, stem: str, fmt: str = "html"):
    """Ask where to export; returns (path, format, overwrite) or None if cancelled."""
    dialog = QFileDialog(parent, "Export")
    dialog.setAcceptMode(QFileDialog.AcceptSave)
    dialog.setOption(QFileDialog.DontConfirmOverwrite, True)  # we ask after the extension
    dialog.setNameFilters([FILTERS[f] for f in FORMATS])
    dialog.selectNameFilter(FILTERS[fmt])
    dialog.setDirectory(default_folder())
    dialog.selectFile(f"{stem}.{fmt}")
    if not dialog.exec():
        return None
    chosen = dialog.selectedNameFilter()
    fmt = next((f for f in FORMATS if FILTERS[f] == chosen), fmt)
    path = dialog.selectedFiles()[0]
    typed = Path(path).suffix.lower().lstrip(".")
    fmt = typed if typed in FORMATS else fmt  # "run.md" typed under the HTML filter
    path = with_extension(path, fmt)
    if Path(path).exists() and not confirm_replace(parent, path):
        return None
    remember_folder(path)
    return path, fmt, True


def ask_import_path(parent: QWidget | None) -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Import", default_folder(), FILTERS["json"])
    if path:
        remember_folder(path)
    return path or None
