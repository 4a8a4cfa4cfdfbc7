"""Light and dark themes: charts follow the palette, token text stays readable."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QApplication

from app.charts.context import ContextChart
from app.charts.distribution import DistributionChart
from app.core import appearance, theme
from app.widgets.token_view import TokenView
from engine.display.prob_scale import SCALES, contrast_ratio, prob_rgb, text_rgb
from engine.run.records import TokenRecord

MIN_CONTRAST = 4.5  # WCAG AA for text


def _colors(chart: pg.PlotWidget) -> tuple[str, str, str]:
    plot = chart.getPlotItem()
    axis = plot.getAxis("bottom")
    return (
        chart.backgroundBrush().color().name(),
        axis.textPen().color().name(),
        axis.pen().color().name(),
    )


def test_dark_palette_gives_dark_charts_with_light_axes(qtbot, restore_palette):
    QApplication.instance().setPalette(theme.dark_palette())  # as macOS Dark Mode gives
    chart = DistributionChart()
    qtbot.addWidget(chart)
    assert _colors(chart) == (theme.DARK_PLOT_BG, theme.DARK_AXIS, theme.DARK_AXIS)
    assert theme.DARK_AXIS in chart.getPlotItem().titleLabel.item.toHtml().lower() or (
        chart.getPlotItem().titleLabel.opts["color"] == theme.DARK_AXIS
    )


def test_switching_theme_repaints_existing_charts(qtbot, restore_palette):
    appearance.apply_theme("light")
    chart = DistributionChart()
    qtbot.addWidget(chart)
    assert _colors(chart) == ("#ffffff", theme.AXIS, theme.AXIS)
    appearance.apply_theme("dark")
    assert theme.is_dark()
    assert _colors(chart) == (theme.DARK_PLOT_BG, theme.DARK_AXIS, theme.DARK_AXIS)
    assert chart.getPlotItem().titleLabel.opts["color"] == theme.DARK_AXIS
    appearance.apply_theme("light")
    assert _colors(chart) == ("#ffffff", theme.AXIS, theme.AXIS)


def _rgb(color) -> tuple[int, int, int]:
    return color.red(), color.green(), color.blue()


def _context_contrasts(chart: ContextChart) -> dict[str, float]:
    """Contrast against the chart's background of each axis's text, ticks and title
    (the whole window's axis on top, the rows on the left, the used part's below) and
    of the cached prompt's outline."""
    from PySide6.QtGui import QColor

    bg = _rgb(chart.backgroundBrush().color())
    plot = chart.getPlotItem()
    ratios = {}
    for name in ("top", "left", "bottom"):
        axis = plot.getAxis(name)
        ratios[f"{name} text"] = contrast_ratio(_rgb(axis.textPen().color()), bg)
        ratios[f"{name} ticks"] = contrast_ratio(_rgb(axis.tickPen().color()), bg)
        ratios[f"{name} title"] = contrast_ratio(_rgb(QColor(axis.labelStyle["color"])), bg)
    outline = chart.bars["cached"].opts["pen"].color()
    ratios["cached outline"] = contrast_ratio(_rgb(outline), bg)
    return ratios


def test_context_chart_axes_are_readable_when_made_under_the_dark_theme(qtbot, restore_palette):
    appearance.apply_theme("dark")
    chart = ContextChart()
    qtbot.addWidget(chart)
    assert chart.backgroundBrush().color().name() == theme.DARK_PLOT_BG
    assert chart.getPlotItem().getAxis("top").textPen().color().name() == theme.DARK_AXIS
    for part, ratio in _context_contrasts(chart).items():
        assert ratio >= MIN_CONTRAST, f"{part}: {ratio:.2f}:1 on the dark chart"


def test_context_chart_axes_follow_a_change_of_theme(qtbot, restore_palette):
    appearance.apply_theme("light")
    chart = ContextChart()
    qtbot.addWidget(chart)
    for mode in ("dark", "light"):
        appearance.apply_theme(mode)
        for part, ratio in _context_contrasts(chart).items():
            assert ratio >= MIN_CONTRAST, f"{part}: {ratio:.2f}:1 in {mode}"


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_token_text_contrast_over_the_whole_scale(scale):
    worst = min(
        contrast_ratio(prob_rgb(i / 1000, scale), text_rgb(prob_rgb(i / 1000, scale)))
        for i in range(1001)
    )
    assert worst >= 4.5
    assert contrast_ratio(prob_rgb(None), text_rgb(prob_rgb(None))) >= 4.5


def _token(step, prob):
    return TokenRecord(
        step=step, token_id=step, text=f"t{step} ", logprob=None, prob=prob,
        sampled_logprob=None, top=(), sampled_top=(), entropy=None, sampled_entropy=None,
        elapsed_s=0.0, latency_s=0.0, context_tokens=step,
    )  # fmt: skip


def test_token_view_text_colour_contrasts_with_its_shading(qtbot, restore_palette):
    appearance.apply_theme("dark")  # the view's own text colour is light here
    view = TokenView()
    qtbot.addWidget(view)
    view.append_tokens([_token(i, i / 10) for i in range(11)])
    doc = view.document()
    for step in range(11):
        cursor = view._cursor_for(step)
        cursor.setPosition(cursor.position() - 1)  # inside the token
        cursor.movePosition(cursor.MoveOperation.Right)
        fmt = cursor.charFormat()
        bg, fg = fmt.background().color(), fmt.foreground().color()
        ratio = contrast_ratio(bg.getRgb()[:3], fg.getRgb()[:3])
        assert ratio >= 4.5, (step, bg.name(), fg.name())
    assert doc.toPlainText().startswith("t0 t1")


def test_cividis_is_remembered_and_reshades_the_view(qtbot, restore_palette):
    view = TokenView()
    qtbot.addWidget(view)
    view.append_tokens([_token(0, 0.0)])
    try:
        appearance.set_scale("cividis")
        theme._scale.clear()  # read back from the settings file
        assert theme.current_scale() == "cividis"
        cursor = view._cursor_for(0)
        cursor.setPosition(1)
        assert cursor.charFormat().background().color().getRgb()[:3] == SCALES["cividis"][0][1]
    finally:
        appearance.set_scale("heat")


def test_timeline_axis_titles_are_readable_under_the_dark_theme(qtbot, restore_palette):
    """Its left titles are set (and shortened) after the chart is painted: each keeps
    the theme's colour (setLabel alone drew them near-black on the dark chart)."""
    from app.charts.timeline import TimelineChart

    appearance.apply_theme("dark")
    chart = TimelineChart()
    qtbot.addWidget(chart)
    chart.resize(400, 300)
    chart.show()
    qtbot.wait(30)
    chart.axis_titles.clear()  # fitted again now, after the theme was painted
    chart._fit_axis_titles()
    from PySide6.QtGui import QColor

    bg = _rgb(QColor(theme.DARK_PLOT_BG))
    for plot in (chart.prob_plot, chart.entropy_plot):
        axis = plot.getAxis("left")
        assert axis.labelText, "no title to read"
        ratio = contrast_ratio(_rgb(QColor(axis.labelStyle["color"])), bg)
        assert ratio >= MIN_CONTRAST, f"{axis.labelText}: {ratio:.2f}:1"
