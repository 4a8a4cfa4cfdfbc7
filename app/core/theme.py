"""Colours and fonts shared by the views, and the light / dark theme.

The probability scale itself lives in engine/display/prob_scale.py (the HTML export uses it
too); this module turns it into QColors under the scale the person chose (remembered).
The theme follows the system palette unless View ▸ Theme says Light or Dark; charts
read `chart_colors()` (background, foreground) from the palette in use, so a dark
palette gives dark charts with light axes whichever way it was set.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from app.core import settings_store
from engine.display import prob_scale

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
PLOT_BG = "w"  # light theme's chart background and axes
AXIS = "#444444"
DARK_PLOT_BG = "#1e1e1e"
DARK_AXIS = "#d8d8d8"
MUTED = "#808080"  # secondary text readable on light and dark backgrounds (>= 3.5:1)
NOTE_MIX = 0.35  # a note: the palette's text colour moved this far towards its background
# Tinted boxes as (background, text, border), light then dark; text >= 4.5:1 on its box.
TINTS = {
    "error": (("#fde2e1", "#8a1c1c", "#e8a4a1"), ("#4a1f1f", "#ffb4ab", "#8c3b36")),
    "info": (("#eef4fb", "#222222", "#c9dbef"), ("#1f2d3d", "#dde8f5", "#3b5875")),
    "thinking": (("#faf6ec", "#222222", "#e2d6b5"), ("#2e2a20", "#e6e6e6", "#5a4d2e")),
}
THINKING_HEAD = ("#6b5320", "#e0c27a")  # the thinking header's brown, light / dark

THEMES = ("system", "light", "dark")
THEME_KEY = "view/theme"
SCALE_KEY = "view/prob_scale"
_scale: list[str] = []  # the scale in use, read from the settings once


def current_scale() -> str:
    """The probability scale in use ('heat' or 'cividis'), as remembered."""
    if not _scale:
        _scale.append(prob_scale.scale_name(settings_store.value(SCALE_KEY)))
    return _scale[0]


def set_scale(name: str) -> None:
    """Use and remember probability scale `name` (views repaint through app.core.appearance)."""
    name = prob_scale.scale_name(name)
    _scale[:] = [name]
    settings_store.set_value(SCALE_KEY, name)


def prob_rgb(p: float) -> tuple[int, int, int]:
    """The shading colour of a token chosen with probability p (current scale)."""
    return prob_scale.prob_rgb(p, current_scale())


def prob_color(p: float | None) -> QColor:
    """The shade of a probability; a neutral grey where none was reported."""
    return QColor(*prob_scale.prob_rgb(p, current_scale()))


def prob_text_color(p: float | None) -> QColor:
    """Black or white, whichever reads better on `prob_color(p)` (WCAG contrast)."""
    return QColor(*prob_scale.text_rgb(prob_scale.prob_rgb(p, current_scale())))


# GLTR's four rank buckets (top 10, top 100, top 1,000, beyond), in its own hues: green,
# yellow, red, violet. Pale enough that black text reads on each (WCAG AA) in any theme.
RANK_COLORS = ("#a8e6a1", "#fde68a", "#fca5a5", "#d8b4fe")
NO_RANK = "#d0d0d0"  # a token whose rank was not reported


def rank_color(rank: int | None) -> QColor:
    """The shade of a token's rank under the model, GLTR's way (NO_RANK when unknown)."""
    if rank is None:
        return QColor(NO_RANK)
    from engine.run.read_summary import rank_bucket

    return QColor(RANK_COLORS[rank_bucket(rank)])


def gradient_stops() -> list[tuple[float, str]]:
    """The current scale's stops as (position, '#rrggbb')."""
    return prob_scale.gradient_stops(current_scale())


def theme_mode() -> str:
    """system | light | dark, as chosen in View ▸ Theme (remembered)."""
    mode = settings_store.value(THEME_KEY, "system")
    return mode if mode in THEMES else "system"


def is_dark(palette: QPalette | None = None) -> bool:
    """Whether the palette in use (or `palette`) is a dark one."""
    if palette is None:
        palette = QGuiApplication.palette()
    return palette.color(QPalette.Window).lightness() < 128


def note_color(palette: QPalette | None = None) -> str:
    """Secondary text (notes, hints) for the palette in use: its text colour softened
    towards its background, so it follows any palette and stays readable (>= 4.5:1)."""
    if palette is None:
        palette = QGuiApplication.palette()
    fg, bg = palette.color(QPalette.WindowText), palette.color(QPalette.Window)
    mix = [
        round(a + (b - a) * NOTE_MIX) for a, b in zip(fg.getRgb()[:3], bg.getRgb()[:3], strict=True)
    ]
    return QColor(*mix).name()


def tint(name: str) -> tuple[str, str, str]:
    """(background, text, border) of tinted box `name` (TINTS) in the theme in use."""
    return TINTS[name][is_dark()]


def by_theme(pair: tuple[str, str]) -> str:
    """The light or the dark member of a (light, dark) pair, for the palette in use."""
    return pair[is_dark()]


def chart_colors() -> tuple[str, str]:
    """(background, foreground) for charts under the palette in use."""
    return (DARK_PLOT_BG, DARK_AXIS) if is_dark() else (PLOT_BG, AXIS)


def dark_palette() -> QPalette:
    """A dark palette for Qt's Fusion style (what View ▸ Theme ▸ Dark sets)."""
    p = QPalette()
    window, base, text = QColor(45, 45, 48), QColor(30, 30, 30), QColor(230, 230, 230)
    for role, color in (
        (QPalette.Window, window),
        (QPalette.WindowText, text),
        (QPalette.Base, base),
        (QPalette.AlternateBase, QColor(40, 40, 44)),
        (QPalette.ToolTipBase, QColor(60, 60, 64)),
        (QPalette.ToolTipText, text),
        (QPalette.PlaceholderText, QColor(150, 150, 150)),
        (QPalette.Text, text),
        (QPalette.Button, QColor(55, 55, 58)),
        (QPalette.ButtonText, text),
        (QPalette.BrightText, QColor(255, 90, 90)),
        (QPalette.Light, QColor(80, 80, 84)),
        (QPalette.Midlight, QColor(65, 65, 68)),
        (QPalette.Mid, QColor(50, 50, 53)),
        (QPalette.Dark, QColor(25, 25, 25)),
        (QPalette.Shadow, QColor(0, 0, 0)),
        (QPalette.Highlight, QColor(42, 130, 218)),
        (QPalette.HighlightedText, QColor(255, 255, 255)),
        (QPalette.Link, QColor(110, 170, 255)),
        (QPalette.LinkVisited, QColor(180, 140, 255)),
    ):
        p.setColor(role, color)
    for role in (QPalette.Text, QPalette.ButtonText, QPalette.WindowText):
        p.setColor(QPalette.Disabled, role, QColor(120, 120, 120))
    return p
