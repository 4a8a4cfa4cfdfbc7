"""The Branches tab in a narrow side panel: a branch point's row spans the whole tree,
so "at step 15, after …" is never cut to "at step 1…" by the numbers' columns."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtCore import QObject, Signal

from app.branches.view import BranchesView
from app.session.conversation import Answer
from app.session.run_state import RunState
from engine.run.records import TokenRecord

STEP = 15


class Model(QObject):
    """The SessionSignals the view reads: one turn of a run and its branch."""

    conversation_changed = Signal()
    run_finished = Signal(object)

    def __init__(self, answers):
        super().__init__()
        self.session = SimpleNamespace(
            home=lambda: SimpleNamespace(answers=answers),
            shown_answer=lambda: answers[0],
            home_of=lambda _a: SimpleNamespace(answers=answers),
        )


def _state(words: list[str]) -> RunState:
    state = RunState(prompt="Tell a story.")
    state.add_tokens(
        [
            TokenRecord(i, i, w, -0.7, 0.5, -0.7, (), (), 1.0, 1.0, 0.1 * i, 0.01, 5 + i)
            for i, w in enumerate(words)
        ]
    )
    return state


def test_a_branch_point_row_is_not_cut_by_the_numbers_columns(qtbot):
    words = [f" word{i}" for i in range(24)]
    parent = Answer("Tell a story.", _state(words))
    child = Answer(
        "Tell a story.",
        _state(words[:STEP] + [" other"] * 5),
        parent=parent,
        branch_step=STEP,
        branch_kind="forced",
    )
    view = BranchesView(Model([parent, child]))
    qtbot.addWidget(view)
    view.resize(300, 400)  # the side panel's width
    view.show()
    qtbot.waitExposed(view)
    point = view.tree.topLevelItem(0).child(0)
    assert point.text(0).startswith(f"at step {STEP}, after")
    assert point.isFirstColumnSpanned()
    shown = view.tree.visualItemRect(point).width()
    needed = view.tree.fontMetrics().horizontalAdvance(f"at step {STEP}, after “…")
    assert view.tree.columnWidth(0) < needed < shown  # one column would cut it
