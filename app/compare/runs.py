"""Compare showing finished runs (two branches of one answer, say) as its lanes,
through the window's and the lanes' public methods."""

from __future__ import annotations

from app.compare.lane import MAX_LANES


def show_runs(window, states: list) -> None:
    """Show finished runs (e.g. two branches of one answer) as `window`'s lanes (a
    CompareWindow): their statistics side by side and where they first diverge."""
    if window.running is not None or not states:
        return
    window.set_lane_count(max(2, min(len(states), MAX_LANES)))
    window.set_shared_prompt(states[0].prompt, same=len({s.prompt for s in states}) == 1)
    for lane, state in zip(window.lanes, states, strict=False):
        lane.show_run(state)
    window.refresh_comparison()
