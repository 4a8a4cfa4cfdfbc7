"""The branch actions a token offers, in the answer's and the distribution chart's menus.

"Continue from step N with ' X'" for each candidate the model weighed there (the
chosen one left out: it is the answer already), "another token…" for one of the
person's own, and "Sample futures from step N" with how many to sample (2, 4, 8 or 16;
the person's last choice is remembered and checked, 8 until one is made). Where
branching cannot run (a server's run, a run in progress) the actions are disabled and
say why. A token of a text read through the model (engine/reading) was read, not
chosen: it offers none.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QActionGroup

from app.core import settings_store
from engine.run.continuation import SAMPLE_N
from engine.run.records import TokenRecord

MAX_CANDIDATES = 10
SAMPLE_CHOICES = (2, 4, SAMPLE_N, 16)  # how many futures "Sample" offers to run
SAMPLE_KEY = "branches/sample_n"  # the person's last choice, in the settings store


class BranchRequests(QObject):
    """What a branch action asks for; the window connects these to the BranchFlow."""

    branch = Signal(int, int)  # (step, token id)
    own_token = Signal(int)  # step: ask the person for a token
    sample = Signal(int, int)  # (step, how many futures)


def offers_branches(record: TokenRecord) -> bool:
    """Whether `record`'s step offers branch actions: not a token of a text read
    through the model (there was no choice to branch from)."""
    return not record.read


def add_branch_actions(
    menu, record: TokenRecord, requests: BranchRequests, why_not: Callable[[], str | None]
) -> None:
    """Add the branch actions for `record`'s step to `menu` (a QMenu)."""
    step, reason = record.step, why_not()
    sub = menu.addMenu(f"Continue from step {step} with…")
    sub.setToolTipsVisible(True)
    for c in [c for c in record.top if c.token_id != record.token_id][:MAX_CANDIDATES]:
        act = sub.addAction(f"{c.text!r}  ({math.exp(c.logprob):.1%})")
        act.setToolTip(f"Force {c.text!r} at step {step} and let the model go on from there")
        act.triggered.connect(lambda _=False, i=c.token_id: requests.branch.emit(step, i))
    sub.addSeparator()
    own = sub.addAction("Another token…")
    own.setToolTip("Type one token of the model's vocabulary to put at this step")
    own.triggered.connect(lambda: requests.own_token.emit(step))
    sample = add_sample_menu(menu, step, requests.sample.emit)
    if reason is not None:
        for w in (sub, sample):
            w.setEnabled(False)
        sub.setToolTip(reason)
        sample.setToolTip(reason)
        note = menu.addAction(reason)
        note.setEnabled(False)


def sample_count() -> int:
    """How many futures to sample: the person's last choice, else SAMPLE_N."""
    stored = settings_store.value(SAMPLE_KEY, str(SAMPLE_N))
    n = int(stored) if stored.isdigit() else SAMPLE_N
    return n if n in SAMPLE_CHOICES else SAMPLE_N


def set_sample_count(n: int) -> None:
    """Remember `n` (one of SAMPLE_CHOICES) as the count the menus check next time."""
    settings_store.set_value(SAMPLE_KEY, str(n))


def add_sample_menu(menu, step: int, sample: Callable[[int, int], None]):
    """Add "Sample futures from step `step`" to `menu`: a submenu of SAMPLE_CHOICES, the
    remembered count checked; a choice is remembered, then `sample(step, n)` runs it."""
    chosen = sample_count()

    def choose(n: int) -> None:
        set_sample_count(n)
        sample(step, n)

    sub = menu.addMenu(f"Sample futures from step {step}")
    sub.setToolTipsVisible(True)
    group = QActionGroup(sub)
    for n in SAMPLE_CHOICES:
        act = group.addAction(f"{n} futures")
        act.setCheckable(True)
        act.setChecked(n == chosen)
        act.setToolTip(
            f"Run {n} continuations from this step at the current temperature, "
            f"seeds S … S+{n - 1}: same prefix, different outputs"
        )
        act.triggered.connect(lambda _=False, k=n: choose(k))
        sub.addAction(act)
    return sub


def branch_hint(record: TokenRecord) -> str:
    """The tooltip's last line: how to continue from this step ('' where it cannot:
    no candidates, or a token that was read)."""
    return (
        "<br><i>Right-click: continue from here with another token, or sample futures</i>"
        if record.top and offers_branches(record)
        else ""
    )


def candidate_label(text: str) -> str:
    """A candidate as the menus show it, escaped for rich text."""
    return html.escape(repr(text))
