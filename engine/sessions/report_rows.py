"""Rows both reports (Markdown and HTML) show for a run, computed once."""

from __future__ import annotations

from engine.sessions.journal import RunLog


def problems(r: RunLog) -> tuple[tuple[str, str | None], ...]:
    """Why a run failed and what odd values a server sent.

    Args:
        r: the run.

    Returns:
        (label, text) rows; text is None where there is nothing to say.
    """
    from engine.sessions.sanitize import oddities_summary

    return (
        ("error", r.done.error if r.done else None),
        ("odd values from the server", oddities_summary(r.tokens)),
    )


def cost_rows(r: RunLog) -> tuple[tuple[str, str], ...]:
    """A finished run's energy, electricity money and hosted-API prices (engine/run_cost.py).

    Args:
        r: the run.

    Returns:
        (label, text) rows; none for a run that never finished.
    """
    from engine.run_cost import rows, run_cost

    return tuple(rows(run_cost(r.done))) if r.done else ()
