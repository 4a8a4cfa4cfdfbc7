"""Shared look for every chart: the theme's background, legible axes, a title.

Every styled plot is remembered (weakly), so a change of theme repaints them all
(`paint_all`); a plot made later reads the palette in use when it is styled.
"""

from __future__ import annotations

import weakref

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QSizeF, Qt
from PySide6.QtGui import QFont, QGuiApplication, QTextOption
from PySide6.QtWidgets import QAbstractScrollArea, QFrame, QScrollArea, QVBoxLayout, QWidget

from app.core.repaint_registry import on_repaint
from app.core.theme import AXIS, PLOT_BG, chart_colors

pg.setConfigOptions(antialias=False, background=PLOT_BG, foreground=AXIS)
_PLOTS: weakref.WeakSet = weakref.WeakSet()
TITLE_SIZE = "10pt"
TITLE_MIN_ROW = 30  # px: pyqtgraph's own title row height


def style_plot(plot: pg.PlotItem, title: str, left: str = "", bottom: str = "") -> None:
    set_title(plot, title, "&nbsp;")
    font = QFont()
    font.setPointSize(8)
    for name in ("left", "bottom", "right"):
        axis = plot.getAxis(name)
        axis.setTickFont(font)
        axis.enableAutoSIPrefix(False)
    if left:
        plot.setLabel("left", left, **{"font-size": "8pt"})
    if bottom:
        plot.setLabel("bottom", bottom, **{"font-size": "8pt"})
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.setMenuEnabled(False)
    track(plot)


def track(plot: pg.PlotItem) -> None:
    """Paint `plot` in the theme's colours now and again whenever the theme changes."""
    _PLOTS.add(plot)
    paint_plot(plot)


def paint_plot(plot: pg.PlotItem) -> None:
    """The theme's chart background, axis lines, axis text, title and legend on `plot`."""
    bg, fg = chart_colors()
    pg.setConfigOptions(background=bg, foreground=fg)  # for legends and views made later
    for view in plot.scene().views() if plot.scene() is not None else ():
        view.setBackground(bg)
    for name in ("left", "bottom", "right", "top"):
        axis = plot.getAxis(name)
        axis.setPen(fg)
        axis.setTextPen(fg)
    if plot.titleLabel.text:
        plot.titleLabel.setText(plot.titleLabel.text, color=fg)
        _fit_title_row(plot)
    legend = plot.legend
    if legend is not None:
        legend.setLabelTextColor(fg)
        for _sample, label in legend.items:  # setLabelTextColor keeps the old text's colour
            label.setText(label.text, color=fg)
        legend.setBrush(pg.mkBrush(bg + "c0" if bg.startswith("#") else (255, 255, 255, 192)))
        legend.setPen(pg.mkPen(fg))


def legend_below(plot: pg.PlotItem, columns: int, text_size: str = "7pt") -> pg.LegendItem:
    """A legend in the row under `plot`'s view box (never over a curve), painted in the
    theme's colours with the plot (paint_plot finds it as the plot's own legend)."""
    legend = pg.LegendItem(labelTextSize=text_size, verSpacing=-8, colCount=columns)
    plot.layout.addItem(legend, 4, 1)
    plot.legend = legend
    return legend


def paint_all() -> None:
    """Repaint every styled plot in the theme's colours (after a change of theme)."""
    for plot in list(_PLOTS):
        if shiboken6.isValid(plot):
            paint_plot(plot)
        else:  # its widget was closed and deleted
            _PLOTS.discard(plot)


on_repaint(paint_all)


def set_title(plot: pg.PlotItem, title: str, detail: str = "") -> None:
    """A short bold title and, under it, a smaller line of live numbers.

    The title wraps to the plot's width and its row grows to fit: a title never makes
    the plot wider than its widget (pyqtgraph would then clip the right-hand axis and
    the end of the x range), whatever the window size and the labels' lengths.
    """
    html = f"<b>{title}</b>"
    if detail:
        html += f"<br><span style='font-size:8pt'>{detail}</span>"
    if getattr(plot, "_logitscope_title", None) != html:  # text layout is costly
        plot._logitscope_title = html
        _wrap_title(plot)
        plot.setTitle(html, size=TITLE_SIZE, color=chart_colors()[1])
        plot._logitscope_title_row = None  # setTitle put the row back to pyqtgraph's 30 px
        _fit_title_row(plot)


def _wrap_title(plot: pg.PlotItem) -> None:
    """Once per plot: the title label asks for no width of its own and wraps its text
    to the width it is given (pyqtgraph sets its minimum width to the text's width)."""
    label = plot.titleLabel
    if getattr(label, "_logitscope_wraps", False):
        return
    label._logitscope_wraps = True
    label.item.document().setDefaultTextOption(QTextOption(Qt.AlignHCenter))
    place_text = label.resizeEvent

    def update_min() -> None:
        height = label.itemRect().height()
        label.setMinimumWidth(0)
        label.setMinimumHeight(height)
        label._sizeHint = {
            Qt.MinimumSize: (0, height),
            Qt.PreferredSize: (0, height),
            Qt.MaximumSize: (-1, -1),
            Qt.MinimumDescent: (0, 0),
        }
        label.updateGeometry()

    def resized(event) -> None:
        width = label.rect().width()
        if width > 0 and abs(label.item.textWidth() - width) > 0.5:
            label.item.setTextWidth(width)
        place_text(event)
        _fit_title_row(plot)

    label.updateMin = update_min
    label.resizeEvent = resized
    label.sizeHint = lambda which, constraint=None: QSizeF(*label._sizeHint.get(which, (0, 0)))


def _fit_title_row(plot: pg.PlotItem) -> None:
    """The title row as tall as the (wrapped) title: no line is cut off."""
    height = max(int(plot.titleLabel.item.boundingRect().height()) + 2, TITLE_MIN_ROW)
    if getattr(plot, "_logitscope_title_row", None) != height:
        plot._logitscope_title_row = height
        plot.titleLabel.setMaximumHeight(height)
        plot.layout.setRowFixedHeight(0, height)


def empty_text(plot: pg.PlotItem, message: str) -> pg.TextItem:
    """A centred grey message shown while the chart has no data (see `show_empty`)."""
    # Two short lines fit the narrowest chart: "Run a prompt to see / what it shows".
    text = message.replace("Run a prompt to see ", "Run a prompt to see\n")
    item = pg.TextItem(text, color="#888888", anchor=(0.5, 0.5))
    font = QGuiApplication.font()  # the application's family (QFont("") fell back to serif)
    font.setPointSize(9)
    item.setFont(font)
    plot.addItem(item, ignoreBounds=True)
    return item


NOT_REPORTED = "Not reported by this server\n({what})"


def show_empty(
    plot: pg.PlotItem,
    item: pg.TextItem,
    empty: bool,
    x=(0, 1),
    y=(0, 1),
    message: str | None = None,
) -> None:
    """Toggle the empty-state message; when empty, pin non-negative ranges (no -0.4 axes).
    `message` replaces the usual text (e.g. data a remote server does not report)."""
    if not hasattr(item, "_logitscope_default"):
        item._logitscope_default = item.textItem.toPlainText()
    wanted = message or item._logitscope_default
    if item.textItem.toPlainText() != wanted:
        item.setText(wanted)
    item.setVisible(empty)
    if empty:
        plot.setRange(xRange=x, yRange=y, padding=0)
        item.setPos((x[0] + x[1]) / 2, (y[0] + y[1]) / 2)


def view_point(plot: pg.PlotItem, scene_pos):
    """The data coordinates under a scene point, or None outside the plot area."""
    vb = plot.vb
    if not vb.sceneBoundingRect().contains(scene_pos):
        return None
    return vb.mapSceneToView(scene_pos)


def count_label(n: int, short_form: bool = False) -> str:
    """A whole count for an axis: '1,000', or short (1k, 10k, 1M) where the labels sit
    side by side on a narrow axis ('1,000' and '10,000' ran together there)."""
    if short_form:
        for size, suffix in ((1_000_000, "M"), (1_000, "k")):
            if n >= size:
                return f"{n / size:g}{suffix}"
    return f"{n:,}"


def decade_ticks(top: int, short_form: bool = False) -> list[list[tuple[float, str]]]:
    """Ticks for a log10 axis of a whole number (a rank, a count of tokens): at 1, 10,
    100 … 10**top only, never 0.9 or 2 … 9 crowded under 10. Two levels, the even
    powers first: pyqtgraph always labels the first and labels the second only where
    there is room, so labels never run together."""
    powers = range(max(int(top), 0) + 1)
    return [
        [(float(k), count_label(10**k, short_form)) for k in powers if k % 2 == 0],
        [(float(k), count_label(10**k, short_form)) for k in powers if k % 2 == 1],
    ]


def pen(color: str, width: float = 1, style=None) -> pg.mkPen:
    kw = {"color": color, "width": width}
    if style is not None:
        kw["style"] = style
    return pg.mkPen(**kw)


def short(text: str, limit: int = 14) -> str:
    """A token's text as a tick label: leading/trailing spaces, newlines and tabs made
    visible (' the' and 'the' are different tokens), long ones cut."""
    shown = text.replace("\n", "↵").replace("\t", "⇥")
    body = shown.strip(" ")
    lead, trail = len(shown) - len(shown.lstrip(" ")), len(shown) - len(shown.rstrip(" "))
    shown = "␣" * lead + body + "␣" * (trail if body else 0) or "∅"
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


class _WheelToPane(QObject):
    """Event filter on a chart's viewport: a wheel turn over the chart (its plot or its
    axes) goes to the scroll area around the chart, never to the chart (no zoom)."""

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() != QEvent.Type.Wheel:
            return False
        pane = _pane_around(watched.parentWidget())
        if pane is None:
            event.ignore()  # Qt offers an ignored wheel turn to the widgets around
        else:
            QCoreApplication.sendEvent(pane.viewport(), event)  # it scrolls the pane
        return True  # the chart never sees it: neither its view nor its axes zoom


def _pane_around(chart: QWidget | None) -> QAbstractScrollArea | None:
    """The nearest scroll area that holds `chart` (a chart is a scroll area itself)."""
    widget = chart.parentWidget() if chart is not None else None
    while widget is not None and not isinstance(widget, QAbstractScrollArea):
        widget = widget.parentWidget()
    return widget


_WHEEL_TO_PANE = _WheelToPane()


def scroll_not_zoom(chart: pg.GraphicsView) -> None:
    """A chart inside a scrolling pane: the mouse wheel over it scrolls the pane and never
    zooms the chart (a zoom made while scrolling leaves the axes far from the data)."""
    chart.viewport().installEventFilter(_WHEEL_TO_PANE)


def scroll_pane(owner: QWidget, body: QWidget) -> QScrollArea:
    """Fill `owner` with `body` in a frameless scroll area: a narrow window scrolls it
    instead of being widened by it, and the wheel over its charts scrolls (scroll_not_zoom).

    Returns:
        The scroll area.
    """
    scroll = QScrollArea(owner)
    scroll.setWidget(body)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.NoFrame)
    layout = QVBoxLayout(owner)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(scroll)
    for chart in body.findChildren(pg.GraphicsView):
        scroll_not_zoom(chart)
    return scroll
