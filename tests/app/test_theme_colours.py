"""Tinted boxes, notes and the thinking header follow the theme: under a dark palette
every one of them is readable (WCAG contrast >= 4.5:1 against what it sits on), and
switching back to light gives the light colours again."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from app.charts.frame import ChartFrame
from app.charts.throughput import ThroughputChart
from app.core import appearance, theme
from app.playground.thinking_view import ThinkingBlock
from app.shell.layout import build_center
from engine.display.prob_scale import contrast_ratio

MIN_CONTRAST = 4.5


def _rgb(name: str) -> tuple[int, int, int]:
    c = QColor(name)
    return c.red(), c.green(), c.blue()


def _pair(widget, palette: QPalette) -> tuple[str, str]:
    """(text, background) from the widget's stylesheet; the palette's window where the
    stylesheet sets no background."""
    css = widget.styleSheet()
    fg = re.search(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})", css)
    bg = re.search(r"background:\s*(#[0-9a-fA-F]{6})", css)
    assert fg, css
    return fg.group(1), bg.group(1) if bg else palette.color(QPalette.Window).name()


def _themed_widgets(qtbot, keep: list) -> dict[str, QWidget]:
    prompt_panel = SimpleNamespace(token_count=QLabel(), show_tokens=QPushButton(), stack=QWidget())
    center = build_center(prompt_panel)
    thinking, chart = ThinkingBlock(), ThroughputChart()
    frame = ChartFrame("throughput", "Throughput", chart, lambda: "")
    for w in (center.widget, thinking, frame):
        qtbot.addWidget(w)
    keep += [center, thinking, frame]  # qtbot holds widgets weakly
    return {
        "error banner": center.banner,
        "A/B label": center.ab_label,
        "viewing label": center.viewing_label,
        "thinking header": thinking.header,
        "thinking text": thinking.view,
        "chart readout": frame.readout,
    }


@pytest.mark.parametrize("mode", ["dark", "light"])
def test_boxes_and_notes_are_readable_in_both_themes(qtbot, qapp, restore_palette, mode):
    keep: list = []
    widgets = _themed_widgets(qtbot, keep)
    light = {name: _pair(w, qapp.palette()) for name, w in widgets.items()}
    appearance.apply_theme(mode)
    palette = qapp.palette()
    assert theme.is_dark(palette) == (mode == "dark")
    for name, w in widgets.items():
        fg, bg = _pair(w, palette)
        ratio = contrast_ratio(_rgb(fg), _rgb(bg))
        assert ratio >= MIN_CONTRAST, f"{name}: {fg} on {bg} is {ratio:.2f}:1 in {mode}"
        if mode == "dark":  # the light theme's colours are gone
            assert (fg, bg) != light[name], name


def test_notes_follow_any_palette(qapp):
    for palette in (theme.dark_palette(), QPalette(QColor("#f0f0f0"))):
        note = _rgb(theme.note_color(palette))
        window = _rgb(palette.color(QPalette.Window).name())
        assert contrast_ratio(note, window) >= MIN_CONTRAST
        assert note != _rgb(palette.color(QPalette.WindowText).name())  # softer than text
