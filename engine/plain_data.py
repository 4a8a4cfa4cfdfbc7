"""Frozen dataclasses of plain values that become JSON and come back: their one base.

The lab's results (engine/lab/results.py) and the Inside views' results
(engine/inside/inside_results.py) are built on `PlainData`: `to_dict()` is their JSON (tuples become
lists, at every depth) and `from_dict()` rebuilds one from it (unknown keys are
ignored, a missing required field is a TypeError, lists become tuples again and
the dicts of a row field its row dataclasses). `PlainTuples` also makes every list
a tuple when one is built, for results built from numpy's `tolist()`. Nothing else
of the engine is imported here, so the records at the bottom of the engine can use it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import ClassVar


@dataclass(frozen=True)
class PlainData:
    """A frozen dataclass of plain values; `nested` names its row fields."""

    nested: ClassVar[dict] = {}  # field -> the row class of its item (or of its one row)

    def __post_init__(self):
        rows_in(self)

    def to_dict(self) -> dict:
        """The value as a plain JSON-ready dict (tuples become lists, at every depth).

        Returns:
            One key per field.
        """
        return plain(asdict(self))

    @classmethod
    def from_dict(cls, data: dict):
        """Rebuild the value from its `to_dict()`; unknown keys are ignored.

        Args:
            data: the dict; lists become tuples, rows their row dataclasses.

        Returns:
            The dataclass.

        Raises:
            TypeError: a required field is missing.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{k: field_value(cls.nested, k, v) for k, v in data.items() if k in names})


def plain(value):
    """`value` with every tuple a list (dicts and lists walked through)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def rows_in(obj) -> None:
    """Make `obj`'s row fields their row dataclasses (dicts are rebuilt)."""
    for name in obj.nested:
        object.__setattr__(obj, name, field_value(obj.nested, name, getattr(obj, name)))


def field_value(nested: dict, name: str, value):
    """A field's value from JSON: lists as tuples (lists in lists too, never inside a
    dict), a row field's dicts as its rows.

    Args:
        nested: the class's row fields (field -> row class).
        name: the field.
        value: its value as built or as read from JSON.

    Returns:
        The value the dataclass holds.
    """
    row = nested.get(name)
    if row is not None and isinstance(value, dict):
        return row.from_dict(value)
    if row is not None and isinstance(value, (list, tuple)):
        return tuple(v if isinstance(v, row) else row.from_dict(v) for v in value)
    return tuples(value)


def tuples(value):
    """Lists and tuples as tuples at every depth of lists (dicts are left as they are)."""
    if not isinstance(value, (list, tuple)):
        return value
    if any(isinstance(v, (list, tuple)) for v in value):
        return tuple(tuples(v) for v in value)
    return value if isinstance(value, tuple) else tuple(value)


@dataclass(frozen=True)
class PlainTuples(PlainData):
    """PlainData whose every list is a tuple at every depth however it was built (a
    numpy `tolist()` included), so one built in the engine, one from the pipe and one
    from JSON compare equal."""

    def __post_init__(self):
        for f in fields(self):
            value = field_value(self.nested, f.name, getattr(self, f.name))
            object.__setattr__(self, f.name, value)
