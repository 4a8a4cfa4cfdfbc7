"""Colours and fonts shared by the views."""

from __future__ import annotations

from PySide6.QtGui import QColor

# Probability shading: red (unlikely) -> yellow -> green (likely), as in heat maps.
_STOPS = ((0.0, (248, 105, 107)), (0.5, (255, 235, 132)), (1.0, (99, 190, 123)))
RAW = "#4c78a8"  # the model's own distribution (T = 1)
SAMPLED = "#f58518"  # the distribution actually sampled from
CHOSEN = "#e45756"
ENTROPY = "#72b7b2"
SYSTEM = "#b279a2"
PROMPT = "#4c78a8"
OUTPUT = "#f58518"
FREE = "#e0e0e0"
EARLIER_USER = "#9ebbd8"  # earlier turns of the conversation: lighter prompt / output
EARLIER_ANSWER = "#f9c48f"
THINKING = "#8c6d31"
PLOT_BG = "w"
AXIS = "#444444"


def prob_rgb(p: float) -> tuple[int, int, int]:
    """The shading colour of a token chosen with probability p."""
    p = min(max(p, 0.0), 1.0)
    for (p0, c0), (p1, c1) in zip(_STOPS, _STOPS[1:], strict=False):
        if p <= p1:
            f = (p - p0) / (p1 - p0)
            return tuple(round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
    return _STOPS[-1][1]


def prob_color(p: float | None) -> QColor:
    """The shade of a probability; a neutral grey where none was reported."""
    return QColor(238, 238, 238) if p is None else QColor(*prob_rgb(p))


def gradient_stops() -> list[tuple[float, str]]:
    return [(p, "#{:02x}{:02x}{:02x}".format(*c)) for p, c in _STOPS]
