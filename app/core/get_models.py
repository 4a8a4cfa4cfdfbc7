"""File ▸ Get models…: search the Hugging Face hub for MLX and GGUF models, see each
one's size, quantization, licence, downloads and whether it fits this machine, and
download one into the Hugging Face cache with a byte progress bar, Cancel and resume.

The hub calls (engine/models/hub.py: no MLX) run on a plain thread; their results
come back as Qt signals, so the window never waits on the network.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from engine.models import hub
from engine.models.memory_fit import memory_fit

COLUMNS = ("Model", "Format", "Quant", "Parameters", "Size", "Downloads", "Licence", "Memory")


class _Relay(QObject):
    """Carries a worker thread's results to the GUI thread."""

    found = Signal(object)  # list[HubModel]
    files = Signal(object)  # list[HubFile]
    progress = Signal(object)  # DownloadProgress
    finished = Signal(object)  # the downloaded path
    failed = Signal(str)


def _cell(text: str, tip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemIsEditable)
    if tip:
        item.setToolTip(tip)
    return item


class GetModelsDialog(QDialog):
    """Search the hub and download one model; `downloaded` carries its path."""

    downloaded = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Get models")
        self.resize(900, 480)
        self.relay = _Relay()
        self.results: list[hub.HubModel] = []
        self.stop = threading.Event()
        self.query = QLineEdit(placeholderText="Search the Hugging Face hub, e.g. qwen 0.5b")
        self.search_button = QPushButton("Search")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QTableWidget.SelectRows)
        self.table.setSelectionMode(QTableWidget.SingleSelection)
        self.file = QComboBox()
        self.file.setToolTip("A GGUF repo's quantizations: pick the file to download")
        self.download_button = QPushButton("Download")
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.setEnabled(False)
        self.bar = QProgressBar()
        self.status = QLabel("")
        self.status.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.query, 1)
        top.addWidget(self.search_button)
        bottom = QHBoxLayout()
        bottom.addWidget(QLabel("File"))
        bottom.addWidget(self.file, 1)
        bottom.addWidget(self.download_button)
        bottom.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        for part in (top, self.table, bottom, self.bar, self.status):
            (layout.addLayout if isinstance(part, QHBoxLayout) else layout.addWidget)(part)
        self.search_button.clicked.connect(self._on_search)
        self.query.returnPressed.connect(self._on_search)
        self.table.itemSelectionChanged.connect(self._on_selected)
        self.download_button.clicked.connect(self._on_download)
        self.cancel_button.clicked.connect(self.stop.set)
        self.relay.found.connect(self._on_found)
        self.relay.files.connect(self._on_files)
        self.relay.progress.connect(self._on_progress)
        self.relay.finished.connect(self._on_finished)
        self.relay.failed.connect(self._on_failed)

    def _in_background(self, work, done: Signal) -> None:
        def run():
            try:
                done.emit(work())
            except hub.HubError as e:
                self.relay.failed.emit(str(e))

        threading.Thread(target=run, daemon=True).start()

    def _on_search(self) -> None:
        text = self.query.text().strip()
        self.status.setText(f"Searching the hub for '{text}'…")
        self._in_background(lambda: hub.search(text), self.relay.found)

    def _on_found(self, models) -> None:
        self.results = list(models)
        self.table.setRowCount(len(self.results))
        for row, m in enumerate(self.results):
            fit = memory_fit(m.size_bytes) if m.size_bytes else None
            cells = (
                m.repo_id,
                m.format,
                m.quantization or "—",
                f"{m.parameters / 1e6:,.0f} M" if m.parameters else "—",
                f"{m.size_bytes / 1e9:.2f} GB" if m.size_bytes else "—",
                f"{m.downloads:,}",
                m.license or "—",
                fit.verdict if fit else "—",
            )
            for col, text in enumerate(cells):
                tip = fit.text() + " (weights; the KV cache adds more)" if fit and col == 7 else ""
                self.table.setItem(row, col, _cell(text, tip))
        self.status.setText(f"{len(self.results)} models" if self.results else "Nothing found")

    def _selected(self) -> hub.HubModel | None:
        rows = self.table.selectionModel().selectedRows()
        return self.results[rows[0].row()] if rows else None

    def _on_selected(self) -> None:
        self.file.clear()
        m = self._selected()
        if m is not None and m.format == "GGUF":
            self._in_background(lambda: hub.repo_files(m.repo_id), self.relay.files)

    def _on_files(self, files) -> None:
        for f in files:
            if f.name.lower().endswith(".gguf"):
                size = f" · {f.size_bytes / 1e9:.2f} GB" if f.size_bytes else ""
                fit = f" · {memory_fit(f.size_bytes).verdict}" if f.size_bytes else ""
                self.file.addItem(f"{f.quantization or f.name}{size}{fit}", f.name)

    def _on_download(self) -> None:
        m = self._selected()
        if m is None:
            self.status.setText("Choose a model in the list first")
            return
        filename = self.file.currentData() if m.format == "GGUF" else None
        if m.format == "GGUF" and not filename:
            self.status.setText("Choose which GGUF file (quantization) to download")
            return
        self.stop.clear()
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.status.setText(f"Downloading {filename or m.repo_id}…")
        self._in_background(
            lambda: str(
                hub.download(m.repo_id, filename, self.relay.progress.emit, self.stop.is_set)
            ),
            self.relay.finished,
        )

    def _on_progress(self, p: hub.DownloadProgress) -> None:
        if p.total_bytes:
            self.bar.setMaximum(1000)
            self.bar.setValue(int(1000 * p.done_bytes / p.total_bytes))
            self.bar.setFormat(f"{p.done_bytes / 1e6:,.1f} of {p.total_bytes / 1e6:,.1f} MB")

    def _on_finished(self, path: str) -> None:
        self.download_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.status.setText(f"Downloaded to {path}")
        self.downloaded.emit(path)

    def _on_failed(self, message: str) -> None:
        self.download_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.status.setText(message)
