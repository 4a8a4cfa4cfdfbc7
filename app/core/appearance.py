"""Applying the look the person chose: the theme (System / Light / Dark) and the
probability scale (red → green or cividis), with the View menu entries that choose
them. Changing either repaints what is on screen: charts, every token view (shading
and text colour), the probability legends and every widget registered with
`on_theme` / `themed_style` (tinted boxes, notes); nothing is re-run."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QStyleFactory

from app.core import settings_store, theme
from engine.display.prob_scale import SCALE_LABELS, SCALES

LEGEND_NAME = "probLegend"  # objectName of every probability legend's colour bar
SCHEMES = {
    "system": Qt.ColorScheme.Unknown,
    "light": Qt.ColorScheme.Light,
    "dark": Qt.ColorScheme.Dark,
}
_system_palette: list[QPalette] = []  # the palette the platform gave, before any override
# widget -> [fn(widget)]: the functions never hold the widget, so it can still go.
_HOOKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def on_theme(widget, repaint_fn: Callable) -> None:
    """Call `repaint_fn(widget)` whenever the theme changes, while `widget` lives."""
    _HOOKS.setdefault(widget, []).append(repaint_fn)


def themed_style(widget, css: Callable[[], str]) -> None:
    """Give `widget` the stylesheet `css()` builds from the theme, now and on every
    change of theme (colours come from app.core.theme: tint, note_color, by_theme)."""
    widget.setStyleSheet(css())
    on_theme(widget, lambda w: w.setStyleSheet(css()))


def apply_theme(mode: str | None = None) -> str:
    """Set the application palette for `mode` (None: the remembered one) and repaint.

    Args:
        mode: system | light | dark.

    Returns:
        The mode applied.
    """
    app = QApplication.instance()
    mode = mode if mode in theme.THEMES else theme.theme_mode()
    if not _system_palette:
        _system_palette.append(QPalette(app.palette()))
        QGuiApplication.styleHints().colorSchemeChanged.connect(lambda _s: repaint())
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "setColorScheme"):  # Qt 6.8+: native styles follow it too
        hints.setColorScheme(SCHEMES[mode])
    system = _system_palette[0]
    if mode == "dark":
        app.setPalette(system if theme.is_dark(system) else theme.dark_palette())
    elif mode == "light" and theme.is_dark(system):
        app.setPalette(QStyleFactory.create("Fusion").standardPalette())  # a light one
    else:
        app.setPalette(system)
    repaint()
    return mode


def set_theme(mode: str) -> None:
    """View ▸ Theme: use and remember `mode`."""
    settings_store.set_value(theme.THEME_KEY, mode)
    apply_theme(mode)


def set_scale(name: str) -> None:
    """View ▸ Probability colours: use and remember scale `name`, and repaint."""
    theme.set_scale(name)
    repaint()


def repaint() -> None:
    """Charts, token views and legends in the current theme and scale."""
    from app.core.repaint_registry import alive, run_hooks

    run_hooks()  # the charts' paint_all (app/charts/base.py)
    for widget, fns in list(_HOOKS.items()):
        if shiboken6.isValid(widget):
            for fn in fns:
                fn(widget)
    for view in alive("token_view"):
        reshade(view)
    for bar in alive("legend"):
        paint_legend(bar)


def reshade(view) -> None:
    """Shade a token view's tokens again (new scale or theme), keeping its selection."""
    records, selected = list(view._records), view._selected
    if not records:
        return
    view.clear_tokens()
    view.append_tokens(records)
    view.select_step(selected)


def paint_legend(bar: QLabel) -> None:
    """The gradient of the current probability scale on a legend's colour bar."""
    stops = ", ".join(f"stop:{p} {c}" for p, c in theme.gradient_stops())
    bar.setStyleSheet(
        "QLabel { background: qlineargradient(x1:0, y1:0, x2:1, y2:0, " + stops + ");"
        " border-radius: 3px; }"
    )


def add_view_actions(menu) -> dict[str, QAction]:
    """Theme and probability-colour submenus of a View menu; returns the actions by name
    (theme_system, theme_light, theme_dark, scale_heat, scale_cividis)."""
    acts = {}
    for title, choices, current, choose, prefix in (
        ("&Theme", {m: m.title() for m in theme.THEMES}, theme.theme_mode(), set_theme, "theme"),
        ("&Probability colours", SCALE_LABELS, theme.current_scale(), set_scale, "scale"),
    ):
        sub = menu.addMenu(title)
        group = QActionGroup(sub)
        for key in choices if prefix == "theme" else SCALES:
            act = QAction(choices[key], sub, checkable=True, checked=key == current)
            act.triggered.connect(lambda _on=False, k=key, f=choose: f(k))
            group.addAction(act)
            sub.addAction(act)
            acts[f"{prefix}_{key}"] = act
    return acts
