"""ChartFrame: one chart with its explanation (?), an enlarge button and a hover readout.

The chart itself is a pyqtgraph widget with a `readout(scene_pos) -> str | None`
method; the frame shows what it returns for the point under the cursor in a
one-line footer, so the numbers are readable without squinting at axes.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QMessageBox,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
)

from app.core.appearance import themed_style
from app.core.theme import note_color
from app.widgets.fitting_label import FittingLabel

HINT = "Hover: read values · double-click: enlarge"


class ChartFrame(QFrame):
    enlarge_requested = Signal(str)

    def __init__(self, name: str, title: str, chart, explain, parent=None):
        """Args: explain: () -> str, the explanation with the current run's numbers."""
        super().__init__(parent)
        self.name, self.title, self.chart, self._explain = name, title, chart, explain
        self.setFrameShape(QFrame.StyledPanel)
        self.help_button = QToolButton()
        self.help_button.setText("?")
        self.help_button.setToolTip(f"What am I looking at? ({title})")
        self.help_button.setAccessibleName(f"Explain the {title} chart")
        self.enlarge_button = QToolButton()
        self.enlarge_button.setText("⤢")
        self.enlarge_button.setToolTip("Enlarge this chart (double-click it too); again to restore")
        self.enlarge_button.setCheckable(True)
        self.enlarge_button.setAccessibleName(f"Enlarge the {title} chart")
        chart.setAccessibleName(f"{title} chart")
        chart.setAccessibleDescription("Hover to read values; the line below shows them")
        self.readout = FittingLabel(HINT)  # a narrow chart shows "Hover: read values"
        themed_style(self.readout, lambda: f"color: {note_color()}; font-size: 8pt;")
        self.readout.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.readout.setMinimumHeight(self.readout.sizeHint().height())
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.readout, 1)
        head.addWidget(self.help_button)
        head.addWidget(self.enlarge_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(1)
        layout.addWidget(chart, 1)
        layout.addLayout(head)
        chart.setMinimumSize(180, 120)
        chart.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Ignored)
        self.help_button.clicked.connect(self.show_help)
        self.enlarge_button.clicked.connect(lambda: self.enlarge_requested.emit(self.name))
        chart.scene().sigMouseMoved.connect(self.hover)
        chart.scene().sigMouseClicked.connect(self._on_click)

    def hover(self, scene_pos) -> str:
        """Show (and return) the readout for a point in the chart's scene."""
        text = self.chart.readout(scene_pos) or HINT
        if self.readout.text() != text:
            self.readout.setText(text)
        return text

    def reset_readout(self) -> None:
        self.readout.setText(HINT)

    def _on_click(self, event) -> None:
        if event.double():
            self.enlarge_requested.emit(self.name)

    def explanation(self) -> str:
        return self._explain()

    def show_help(self) -> None:
        box = QMessageBox(self)
        box.setWindowTitle(self.title)
        box.setIcon(QMessageBox.Information)
        box.setText(self.explanation())
        box.setTextFormat(Qt.PlainText)
        box.setWindowModality(Qt.NonModal)
        box.show()
        self._help = box  # kept alive while open
