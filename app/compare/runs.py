"""Compare showing finished runs (two branches of one answer, say) as its lanes."""

from __future__ import annotations

from app.compare.lane import MAX_LANES


def show_runs(window, states: list) -> None:
    """Show finished runs (e.g. two branches of one answer) as `window`'s lanes (a
    CompareWindow): their statistics side by side and where they first diverge."""
    if window.running is not None or not states:
        return
    window.set_lane_count(max(2, min(len(states), MAX_LANES)))
    window.same_prompt.setChecked(len({s.prompt for s in states}) == 1)
    window.shared_prompt.setPlainText(states[0].prompt)
    for lane, state in zip(window.lanes, states, strict=False):
        lane.reset(state.prompt, state.settings)
        lane.prompt.setPlainText(state.prompt)
        lane.state.model, lane.state.sent = state.model, state.sent
        lane.add_tokens(list(state.tokens))
        lane.state.done, lane.state.error = state.done, state.error
        label = state.run_id or "run"
        if state.branch_step is not None:
            label += f" · branch at step {state.branch_step}"
        lane.status.setText(label)
        lane.redraw()
    window._refresh_summary()
    window._compare()
