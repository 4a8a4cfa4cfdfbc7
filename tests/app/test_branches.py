"""Branching in the window, on the real model: continue with an alternative from the
answer's menu, the branch appears in the Branches tree and every chart follows the
branch selected there, Sample N adds N branches (seeds S..S+N-1), the tree is
journaled and comes back from History, two branches open in Compare."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu

from app.widgets.branch_menu import add_branch_actions
from engine.sessions.session_log import read_session
from tests.app.conftest import RUN_MS, run_and_wait


def wait_idle(qtbot, window):
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=RUN_MS)
    qtbot.waitUntil(lambda: window.state.done is not None, timeout=RUN_MS)
    qtbot.waitUntil(lambda: not window._dirty and not window._stale, timeout=5_000)


def menu_action(window, step: int, label_start: str):
    """The action of the answer's context menu for `step` whose text starts so."""
    menu = QMenu(window)
    add_branch_actions(
        menu, window.output._records[step], window.output.branches, window.output.why_no_branch
    )
    actions = [a for a in menu.actions()]
    for a in menu.actions():
        if a.menu() is not None:
            actions += a.menu().actions()
    return next(a for a in actions if a.text().startswith(label_start)), menu


def test_branch_from_the_menu_then_sample_n(qtbot, window):
    parent = run_and_wait(qtbot, window, "Name a colour of the sky.", max_tokens=6)
    k = 2
    alt = parent.tokens[k].top[1]
    act, _menu = menu_action(window, k, repr(alt.text))
    assert act.isEnabled()
    act.trigger()  # "Continue from step 2 with ' X'"
    wait_idle(qtbot, window)
    branch = window.state
    assert branch is not parent and branch.branch == {
        "parent": parent.run_id,
        "step": k,
        "kind": "forced",
    }
    assert [t.token_id for t in branch.tokens[:k]] == [t.token_id for t in parent.tokens[:k]]
    forced = branch.tokens[k]
    assert forced.forced and forced.token_id == alt.token_id
    assert branch.done.cached_tokens == parent.done.prompt_tokens + k  # no recompute
    # The tree: the parent with a branch point at step k holding the branch.
    view = window.branches_view
    assert window.side_tabs.currentWidget() is view
    root = view.tree.topLevelItem(0)
    point = root.child(0)
    assert point.text(0).startswith(f"at step {k}")
    child = point.child(0)
    assert child.data(0, Qt.UserRole).state is branch and repr(alt.text) in child.text(0)
    # Clicking the parent in the tree shows it: the answer and every chart follow.
    view.tree.itemClicked.emit(root, 0)
    qtbot.waitUntil(lambda: window.state is parent, timeout=5_000)
    qtbot.waitUntil(lambda: not window._dirty and not window._stale, timeout=5_000)
    assert window.output.plain_text() == parent.text
    window.select_step(k)
    qtbot.waitUntil(lambda: not window._dirty, timeout=5_000)
    assert window.dist_chart.token_ids[0] == parent.tokens[k].top[0].token_id

    # Sample 3 from step 1 of the parent (the locked seed S gives S, S+1, S+2).
    window.controls.temp_spin.setValue(0.9)
    window.controls.seed.setValue(21)
    assert window.branch_flow.sample(1, n=3)
    qtbot.waitUntil(
        lambda: window.session.sampling is None and not window.bridge.busy, timeout=RUN_MS
    )
    home = window.session.home()
    samples = [a for a in home.answers if a.branch_kind == "sample"]
    assert len(samples) == 3
    assert [a.state.done.seed for a in samples] == [21, 22, 23]
    assert all(a.parent.state is parent and a.branch_step == 1 for a in samples)
    assert all(a.state.done.cached_tokens >= parent.done.prompt_tokens for a in samples)
    point1 = view.tree.topLevelItem(0).child(0)
    assert point1.text(0).startswith("at step 1") and point1.childCount() == 3

    # Journaled with parents; History reopens the tree.
    session = read_session(window.journal.path)
    kids = [r for r in session.runs if r.branch]
    assert len(kids) == 4 and {r.branch["parent"] for r in kids} == {parent.run_id}
    window.show_run(session.run(samples[0].state.run_id))
    reopened = window.session.home()
    assert len(reopened.answers) == 5
    assert sum(a.parent is not None for a in reopened.answers) == 4

    # Two branches in Compare: its statistics and first divergence.
    a, b, _c = (x.state for x in reopened.answers if x.branch_kind == "sample")
    compare = window.open_compare()
    compare.show_runs([a, b])
    assert [lane.state.tokens for lane in compare.comparison.lanes] == [a.tokens, b.tokens]
    assert "diverge at step" in compare.divergence_info.text() or "identical" in (
        compare.divergence_info.text()
    )
