"""The widgets a change of theme or probability scale repaints, tracked as they are made.

Walking `QApplication.allWidgets()` instead crashed the process (a segfault in
PySide6 while wrapping a widget being torn down); a weak set of the widgets that
need it, each checked with `shiboken6.isValid`, touches nothing else.
"""

from __future__ import annotations

import weakref

import shiboken6

_TRACKED: dict[str, weakref.WeakSet] = {}


def track(kind: str, widget) -> None:
    """Remember `widget` as one of `kind` ("token_view", "legend")."""
    _TRACKED.setdefault(kind, weakref.WeakSet()).add(widget)


def alive(kind: str) -> list:
    """The tracked widgets of `kind` whose Qt objects still exist."""
    return [w for w in list(_TRACKED.get(kind, ())) if shiboken6.isValid(w)]


_HOOKS: list = []


def on_repaint(fn) -> None:
    """Call `fn()` on every repaint (the charts register theirs when imported)."""
    if fn not in _HOOKS:
        _HOOKS.append(fn)


def run_hooks() -> None:
    """Call every registered repaint function."""
    for fn in list(_HOOKS):
        fn()
