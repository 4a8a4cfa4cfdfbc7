"""A small Qt-free observer: the session model announces each change through these.

napari's components use psygnal for the same job; this is the few lines the app
needs. A `Signal` holds its subscribers and calls them, in connection order, when
it is emitted. `Announcer` lets a model's methods note what changed and emits each
noted signal once, in the order first noted, when the outermost method returns: a
method that calls another announces once, after the model is consistent again.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps


class Signal:
    """Subscribers of one kind of change."""

    def __init__(self, name: str):
        self.name = name
        self._subscribers: list[Callable] = []

    def connect(self, fn: Callable) -> Callable:
        if fn not in self._subscribers:
            self._subscribers.append(fn)
        return fn

    def disconnect(self, fn: Callable) -> None:
        if fn in self._subscribers:
            self._subscribers.remove(fn)

    def emit(self, *args) -> None:
        for fn in list(self._subscribers):
            fn(*args)


class Announcer:
    """What changed inside one call of a model's methods (see `announces`)."""

    def __init__(self, names: tuple[str, ...]):
        for name in names:
            setattr(self, name, Signal(name))
        self._depth = 0
        self._pending: dict[str, tuple] = {}

    def note(self, name: str, *args) -> None:
        """Announce `name` with `args` when the outermost call returns (latest args win)."""
        getattr(self, name)  # a typo fails here, not silently later
        self._pending[name] = args

    def enter(self) -> None:
        self._depth += 1

    def leave(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            pending, self._pending = self._pending, {}
            for name, args in pending.items():
                getattr(self, name).emit(*args)


def announces(method: Callable) -> Callable:
    """Decorate a model method: the changes it notes are emitted once it returns."""

    @wraps(method)
    def wrapper(self, *args, **kwargs):
        self.events.enter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.events.leave()

    return wrapper
