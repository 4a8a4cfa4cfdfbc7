"""Compare's cost rows: each lane's energy per token, electricity money, the same tokens
on the price table's first hosted API, and the cost per *completed* answer over every
run the lane made in this window (a run cut off by its token limit still costs)."""

from __future__ import annotations

from PySide6.QtWidgets import QTableWidgetItem

from engine.cost.costs import COMPLETED, load_prices, money
from engine.cost.run_cost import run_cost

COST_ROWS = ("energy (J/token)", "electricity", "same tokens hosted", "per completed answer")


class LaneCosts:
    """Every finished run's electricity money and whether it completed, per lane (a
    Compare lane of app/session/comparison.py: tallied from its `runs` when drawn)."""

    def __init__(self):
        self.runs: dict[int, list[tuple[float | None, str | None, bool]]] = {}

    def add(self, lane, done) -> None:
        """Count `lane`'s finished run (its DoneRecord)."""
        entry = (done.cost, done.cost_currency, done.finish_reason in COMPLETED)
        self.runs.setdefault(lane.index, []).append(entry)

    def per_answer(self, lane) -> str:
        """The lane's money over its completed answers, in words."""
        runs = self.runs.get(lane.index, [])
        done = lane.state.done
        if not runs and done is not None:  # finished runs shown, not run here
            runs = [(done.cost, done.cost_currency, done.finish_reason in COMPLETED)]
        completed = sum(ok for _c, _cur, ok in runs)
        if not runs:
            return "—"
        if any(c is None for c, _cur, _ok in runs):
            return "not known"
        if not completed:
            return f"no completed answer in {len(runs)} run(s)"
        total = sum(c for c, _cur, _ok in runs)
        return f"{money(total / completed, runs[0][1])} ({completed} of {len(runs)} completed)"

    def fill(self, table, lanes, first_row: int) -> None:
        """Write the cost rows of every lane's column, from `first_row` down."""
        prices = load_prices()[:1]
        for col, lane in enumerate(lanes):
            done = lane.state.done
            if done is None:
                texts = ["—"] * len(COST_ROWS)
            else:
                rc = run_cost(done, prices)
                if rc.j_per_token is None:
                    energy = "not known" if rc.energy_j is None else "no token"
                else:
                    energy = f"{rc.j_per_token:.2g}"
                    if not (rc.energy_source or "").startswith("measured"):
                        energy += f" ({rc.energy_source.removeprefix('estimated from ')} est.)"
                hosted = (
                    f"{money(rc.api[0][1], prices[0].currency)} ({prices[0].model})"
                    if rc.api
                    else "no price table"
                )
                texts = [energy, money(rc.cost, rc.currency), hosted, self.per_answer(lane)]
            for i, text in enumerate(texts):
                table.setItem(first_row + i, col, QTableWidgetItem(text))
