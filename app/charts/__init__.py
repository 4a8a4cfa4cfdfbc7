"""The playground's live charts (pyqtgraph). Each chart creates its items once
and feeds them with setData from a RunState; none of them redraws per token."""

from app.charts.context import ContextChart
from app.charts.distribution import DistributionChart
from app.charts.temperature import TemperatureChart
from app.charts.throughput import ThroughputChart
from app.charts.timeline import TimelineChart

__all__ = [
    "ContextChart",
    "DistributionChart",
    "TemperatureChart",
    "ThroughputChart",
    "TimelineChart",
]
