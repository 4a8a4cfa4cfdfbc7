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
