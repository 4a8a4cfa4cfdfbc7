"""ChartsPanel: the playground's five charts in one grid, drawn one at a time."""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QWidget

from app.charts.context import ContextChart
from app.charts.distribution import DistributionChart
from app.charts.temperature import TemperatureChart
from app.charts.throughput import ThroughputChart
from app.charts.timeline import TimelineChart
from app.run_state import RunState

CHARTS = ("dist", "temp", "timeline", "throughput", "context")


class ChartsPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.dist = DistributionChart()
        self.temp = TemperatureChart()
        self.timeline = TimelineChart()
        self.throughput = ThroughputChart()
        self.context = ContextChart()
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.dist, 0, 0)
        grid.addWidget(self.temp, 0, 1)
        grid.addWidget(self.timeline, 1, 0)
        grid.addWidget(self.throughput, 1, 1)
        grid.addWidget(self.context, 2, 0, 1, 2)
        for row, stretch in enumerate((3, 3, 1)):
            grid.setRowStretch(row, stretch)

    def draw(self, name: str, state: RunState, temperature: float) -> None:
        """Feed one chart (by name in CHARTS) from the run; ~5-15 ms of paint each."""
        if name == "dist":
            self.dist.show_record(state.current)
        elif name == "temp":
            self.temp.temp = temperature
            self.temp.show_record(state.current)
        elif name == "timeline":
            self.timeline.update_from(state)
        elif name == "throughput":
            self.throughput.update_from(state)
        else:
            self.context.update_from(state)
