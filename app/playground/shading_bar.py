"""The answer's legend and its shading switch: tokens shaded by the probability the
model gave them (the gradient legend), or by their rank under the model in GLTR's
four buckets (top 10 / top 100 / top 1,000 / beyond), with that legend instead. Rank
shading is a reading setting: it is offered, and applied, only while a read is on
screen (a chat answer is always shaded by probability); the choice is remembered for
reads."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSizePolicy, QWidget

from app.core import settings_store
from app.core.theme import NO_RANK, RANK_COLORS
from engine.run.read_summary import BUCKET_NAMES

SHADING_KEY = "view/shade_by_rank"


def rank_legend() -> QWidget:
    """GLTR's buckets as four labelled chips (black text on the pale hues)."""
    box = QWidget()
    box.setAccessibleName("Rank legend: top 10, top 100, top 1,000, beyond")
    box.setToolTip("Each token is shaded by its rank under the model (GLTR's buckets)")
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    for name, colour in (*zip(BUCKET_NAMES, RANK_COLORS, strict=True), ("no rank", NO_RANK)):
        chip = QLabel(f" {name.replace('1,000', '1k')} ")
        chip.setStyleSheet(f"background: {colour}; color: black; border-radius: 3px;")
        row.addWidget(chip)
    row.addStretch(1)
    box.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # never widens the row
    return box


class ShadingBar(QWidget):
    """The legend of the answer's shading and the switch between the two shadings."""

    def __init__(self, prob_legend: QWidget, view, parent=None):
        super().__init__(parent)
        self.view = view  # the TokenView it shades
        self.prob_legend, self.rank_legend = prob_legend, rank_legend()
        self.by_rank = QCheckBox("By rank")
        self.by_rank.setToolTip(
            "Shade each token by its rank under the model, as GLTR does: green in the top "
            "10, yellow in the top 100, red in the top 1,000, violet beyond. A text the "
            "model would write itself is mostly green."
        )
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.prob_legend, 1)
        row.addWidget(self.rank_legend, 1)
        row.addWidget(self.by_rank)
        self.rank_legend.hide()
        self.reading = False  # whether the run on screen is a read (rank shading applies)
        self.by_rank.setChecked(settings_store.value(SHADING_KEY, "false") == "true")
        self.by_rank.toggled.connect(self._on_toggled)
        self.show_run(False)

    def show_run(self, reading: bool) -> None:
        """Another run is on screen: a read may be shaded by rank, anything else by
        probability (the reading setting never greys a chat answer)."""
        self.reading = bool(reading)
        self.by_rank.setVisible(self.reading)
        self._apply()

    def _on_toggled(self, on: bool) -> None:
        settings_store.set_value(SHADING_KEY, "true" if on else "false")
        self._apply()

    def _apply(self) -> None:
        rank = self.reading and self.by_rank.isChecked()
        self.prob_legend.setVisible(not rank)  # a hidden legend takes no room in the row
        self.rank_legend.setVisible(rank)
        self.view.set_shading("rank" if rank else "prob")
