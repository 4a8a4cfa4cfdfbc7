"""The branch actions a token offers, in the answer's and the distribution chart's menus.

"Continue from step N with ' X'" for each candidate the model weighed there (the
chosen one left out: it is the answer already), "another token…" for one of the
person's own, and "Sample 8 futures from step N". Where branching cannot run
(a server's run, a run in progress) the actions are disabled and say why.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from engine.continuation import SAMPLE_N
from engine.records import TokenRecord

MAX_CANDIDATES = 10


class BranchRequests(QObject):
    """What a branch action asks for; the window connects these to the BranchFlow."""

    branch = Signal(int, int)  # (step, token id)
    own_token = Signal(int)  # step: ask the person for a token
    sample = Signal(int)  # step


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
    sample = menu.addAction(f"Sample {SAMPLE_N} futures from step {step}")
    sample.setToolTip(
        f"Run {SAMPLE_N} continuations from this step at the current temperature, "
        "seeds S … S+7: same prefix, different outputs"
    )
    sample.triggered.connect(lambda: requests.sample.emit(step))
    if reason is not None:
        for w in (sub, sample):
            w.setEnabled(False)
        sub.setToolTip(reason)
        sample.setToolTip(reason)
        note = menu.addAction(reason)
        note.setEnabled(False)


def branch_hint(record: TokenRecord) -> str:
    """The tooltip's last line: how to continue from this step."""
    return (
        "<br><i>Right-click: continue from here with another token, "
        f"or sample {SAMPLE_N} futures</i>"
        if record.top
        else ""
    )


def candidate_label(text: str) -> str:
    """A candidate as the menus show it, escaped for rich text."""
    return html.escape(repr(text))
