"""FittingLabel: a one-line label that shows no cut word where it can help it.

Of its text's shorter forms (the whole; without the parenthesised details; then
fewer " · "-separated parts from the end) it shows the longest that fits its width,
and only elides with "…" when even the first part does not fit. The whole text is
its tooltip, and `text()` returns it, so readers of the label see every figure.
A label told `keep_first_detail()` keeps its first part's details (the status line's
"TTFT 0.12 s (75 of 76 tokens from cache)") until only that part is left.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy

SEP = " · "
_DETAIL = re.compile(r" \([^()]*\)")


def shorter_forms(text: str, keep_first_detail: bool = False) -> list[str]:
    """The forms of `text` to try, longest first.

    Args:
        text: a line of " · "-separated parts, some with " (details)".
        keep_first_detail: the first part keeps its details while the other parts
            lose theirs and then go from the end; they go last of all.

    Returns:
        `text`, then without its details (the first part's kept, if so asked), then
        with fewer parts (at least one), then the first part bare.
    """
    parts = _DETAIL.sub("", text).split(SEP)
    if keep_first_detail:
        parts[0] = text.split(SEP)[0]
    forms = [text] + [SEP.join(parts[:n]) for n in range(len(parts), 0, -1)]
    forms.append(_DETAIL.sub("", parts[0]))  # the first part alone, bare
    return list(dict.fromkeys(forms))  # each form once, in order


class FittingLabel(QLabel):
    """A QLabel for one line of figures that takes no width of its own (the window
    never widens for it) and shows the longest form of its text that fits."""

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Ignored, self.sizePolicy().verticalPolicy())
        self._full = ""
        self._keep_first_detail = False
        self.setText(text)

    def keep_first_detail(self) -> None:
        """From now on the first part's details outlast every other part (see
        `shorter_forms`): for a line whose first figure's detail matters most."""
        self._keep_first_detail = True
        self._fit()

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        """Set the whole text; the label shows the form of it that fits."""
        self._full = text
        self.setToolTip(text)
        self._fit()

    def text(self) -> str:
        """The whole text (what `setText` was given), whatever form is shown."""
        return self._full

    def shown_text(self) -> str:
        """The form of the text on screen at the label's width."""
        return super().text()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() in (QEvent.FontChange, QEvent.StyleChange):  # a stylesheet's font
            self._fit()

    def _fit(self) -> None:
        metrics, room = self.fontMetrics(), self.contentsRect().width()
        forms = shorter_forms(self._full, self._keep_first_detail)
        shown = next((f for f in forms if metrics.horizontalAdvance(f) <= room), None)
        if shown is None:
            shown = metrics.elidedText(forms[-1], Qt.ElideRight, room)
        if super().text() != shown:
            super().setText(shown)
