"""The status bar's progress bar, as every window shows it: idle (hidden, its room
kept), a prefill's share, or an engine progress record (a download is a busy bar, the
rest a percentage; the words go in the status line beside it). Compare's lanes use the
same, so it lives below the shell."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar


def progress_idle(bar: QProgressBar) -> None:
    """Hidden with its space kept (retainSizeWhenHidden): no empty box, no re-layout."""
    bar.setRange(0, 1000)
    bar.setValue(0)
    bar.setFormat("")
    bar.setVisible(False)


def show_prefill(bar: QProgressBar, record) -> None:
    if record.processed < record.total:
        bar.setVisible(True)
        bar.setValue(int(1000 * record.processed / max(record.total, 1)))
        bar.setFormat(f"Prefill {record.processed}/{record.total}")
    else:
        progress_idle(bar)


DOWNLOAD_DONE = 0.1  # below this fraction the model is still downloading (no byte count)


def show_progress(bar: QProgressBar, message: str, fraction: float) -> None:
    """A progress record on the status bar's bar; the download itself reports no
    fraction, so the bar is a busy one until unpacking starts."""
    bar.setVisible(True)
    bar.setRange(0, 0 if fraction < DOWNLOAD_DONE else 1000)
    bar.setValue(int(fraction * 1000))
    # The words go whole in the status line beside it; the narrow bar shows its share
    # (a model's name in 260 px read "Loading Sm…").
    bar.setFormat(f"{fraction:.0%}" if fraction >= DOWNLOAD_DONE else "")
    bar.setToolTip(message)
