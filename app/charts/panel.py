"""ChartsPanel: the playground's five charts, each in a ChartFrame, in a grid that
reflows with the panel's width (3, 2 or 1 columns; tabs when very narrow). One
chart can be enlarged to fill the panel: it moves to a page of its own (the grid's
other cells would leave it a corner), and back when restored. Charts are drawn one
at a time."""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QStackedLayout, QTabWidget, QVBoxLayout, QWidget

from app.charts.context import ContextChart
from app.charts.distribution import DistributionChart
from app.charts.explain import EXPLAIN
from app.charts.frame import ChartFrame
from app.charts.temperature import TemperatureChart
from app.charts.throughput import ThroughputChart
from app.charts.timeline import TimelineChart
from app.session.run_state import RunState

CHARTS = ("dist", "temp", "timeline", "throughput", "context")
TITLES = {
    "dist": "Next-token distribution",
    "temp": "Temperature effect",
    "timeline": "Probability timeline",
    "throughput": "Throughput",
    "context": "Context window",
}
THREE_COLUMNS_FROM = 1500  # px of panel width
CONTEXT_MIN_HEIGHT = 165  # px: its two bars, named, under a wrapped title and two axes
CONTEXT_STRETCH = 2  # its row's share against the chart rows' 3 (1 left the bars ~10 px)
TABS_BELOW = 540  # one column of five charts is always crushed: tabs instead


def columns_for(width: int) -> int:
    """0 means tabs."""
    if width < TABS_BELOW:
        return 0
    return 3 if width >= THREE_COLUMNS_FROM else 2


class ChartsPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.dist = DistributionChart()
        self.temp = TemperatureChart()
        self.timeline = TimelineChart()
        self.throughput = ThroughputChart()
        self.context = ContextChart()
        self.state = RunState()
        self.temperature = 0.7
        self.frames = {
            name: ChartFrame(
                name,
                TITLES[name],
                getattr(self, name),
                lambda n=name: EXPLAIN[n](self.state, self.temperature),
            )
            for name in CHARTS
        }
        self.grid_page = QWidget()
        self.grid = QGridLayout(self.grid_page)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(4)
        self.tabs = QTabWidget()
        self.single_page = QWidget()  # the enlarged chart, alone
        self.single = QVBoxLayout(self.single_page)
        self.single.setContentsMargins(0, 0, 0, 0)
        self.stack = QStackedLayout(self)
        for page in (self.grid_page, self.tabs, self.single_page):
            self.stack.addWidget(page)
        self.columns: int | None = None
        self.enlarged: str | None = None
        for frame in self.frames.values():
            frame.enlarge_requested.connect(self.toggle_enlarged)
        self.frames["context"].setMinimumHeight(CONTEXT_MIN_HEIGHT)
        self.setMinimumSize(300, 300)
        self._arrange(2)

    # -- layout --------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        cols = columns_for(event.size().width())
        if cols != self.columns:
            self._arrange(cols)

    def _arrange(self, cols: int) -> None:
        self.columns = cols
        for frame in self.frames.values():
            self.grid.removeWidget(frame)
            self.single.removeWidget(frame)
        self.tabs.clear()
        if cols == 0:
            for name in CHARTS:
                self.tabs.addTab(self.frames[name], TITLES[name])
            # The tab widget shows its current page only: a frame shown here would be
            # painted through the current one (pieces of other charts over it).
            for frame in self.frames.values():
                frame.setVisible(frame is self.tabs.currentWidget())
            self.stack.setCurrentWidget(self.tabs)
            return
        for r in range(self.grid.rowCount()):
            self.grid.setRowStretch(r, 0)
        row = col = 0
        for name in CHARTS:
            frame = self.frames[name]
            if name == "context":  # a wide, short bar chart: the rest of its row
                span = cols - col
                self.grid.addWidget(frame, row, col, 1, span)
                frame.setVisible(True)
                self.grid.setRowStretch(row, CONTEXT_STRETCH if span == cols else 3)
                break
            self.grid.addWidget(frame, row, col)
            frame.setVisible(True)  # now, not when the re-parented frame's queued show runs
            self.grid.setRowStretch(row, 3)
            col += 1
            if col == cols:
                row, col = row + 1, 0
        self.stack.setCurrentWidget(self.grid_page)
        if self.enlarged is not None:
            self._show_alone(self.enlarged)
        self._check_buttons()

    def toggle_enlarged(self, name: str) -> None:
        """Show one chart alone, filling the panel, or all again (in tabs: that tab)."""
        if self.columns == 0:
            self.tabs.setCurrentWidget(self.frames[name])
            self.enlarged = None
            self._check_buttons()
            return
        self.enlarged = None if self.enlarged == name else name
        self._arrange(self.columns)  # every frame back in the grid, then one alone

    def _show_alone(self, name: str) -> None:
        frame = self.frames[name]
        self.grid.removeWidget(frame)
        self.single.addWidget(frame)
        frame.setVisible(True)
        self.stack.setCurrentWidget(self.single_page)

    def _check_buttons(self) -> None:
        for name, frame in self.frames.items():
            frame.enlarge_button.setChecked(self.enlarged == name)

    def reset_readouts(self) -> None:
        """Another run is on screen: no footer keeps a value read from the last one."""
        for frame in self.frames.values():
            frame.reset_readout()

    # -- drawing -------------------------------------------------------------------------
    def draw(self, name: str, state: RunState, temperature: float) -> None:
        """Feed one chart (by name in CHARTS) from the run; ~5-15 ms of paint each."""
        self.state, self.temperature = state, temperature
        if name == "dist":
            self.dist.show_record(state.current)
        elif name == "temp":
            self.temp.show_record(state.current, state.model, temperature)
        elif name == "timeline":
            self.timeline.update_from(state)
        elif name == "throughput":
            self.throughput.update_from(state)
        else:
            self.context.update_from(state)
