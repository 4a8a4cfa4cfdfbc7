"""Wiring the branch actions into the playground: the answer's and the distribution
chart's menus, the Branches tab, Compare for two branches, names and the bin."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog

from app.branches.flow import BranchFlow, BranchUi
from app.branches.view import BranchesView
from app.widgets.branch_menu import BranchRequests


def wire_branches(
    model, bridge, controls, side_tabs, views, ui: BranchUi, open_compare, journal, show_side
):
    """Build the BranchFlow and the Branches tab and connect them.

    Args:
        model: the SessionSignals.
        bridge: the EngineBridge.
        controls: the sampling controls (settings(), seed, seed_lock).
        side_tabs: the side panel's QTabWidget (the tree becomes its Branches tab).
        views: the widgets whose menus offer branch actions (token view, distribution).
        ui: what the flow may ask of the window.
        open_compare: () -> the Compare window.
        journal: () -> the session's Journal, or None.
        show_side: () -> None, shows the side panel (hidden by the person).

    Returns:
        (BranchFlow, BranchesView).
    """
    flow = BranchFlow(model, bridge, controls, ui)
    requests = BranchRequests(side_tabs)
    for view in views:
        view.offer_branches(requests, flow.why_not)
    tree = BranchesView(model)
    side_tabs.addTab(tree, "Branches")
    tree.setToolTip("The runs of this turn as a tree of branch points")

    def show_tree():
        show_side()
        side_tabs.setCurrentWidget(tree)

    def branch(step: int, token_id: int) -> None:
        if flow.branch(step, token_id):
            show_tree()

    def own_token(step: int) -> None:
        text, ok = QInputDialog.getText(
            side_tabs.window(),
            f"Continue from step {step}",
            "One token of the model's vocabulary (a leading space counts):",
        )
        if ok and text and flow.branch(step, text=text):
            show_tree()

    def sample(step: int, n: int) -> None:
        if flow.sample(step, n):
            show_tree()

    def meta(run_id: str, changes: dict) -> None:
        j = journal()
        if j is not None:
            try:
                j.meta(run_id, **changes)
            except Exception as e:  # noqa: BLE001 - the tree changed; say the history did not
                ui.show_notice(f"History not updated: {e}")

    requests.branch.connect(branch)
    requests.own_token.connect(own_token)
    requests.sample.connect(sample)
    tree.compare_requested.connect(lambda states: open_compare().show_runs(states))
    tree.meta_changed.connect(meta)
    return flow, tree
