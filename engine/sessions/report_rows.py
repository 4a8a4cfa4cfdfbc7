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
    """A finished run's energy, electricity money and hosted-API prices (engine/cost/run_cost.py).

    Args:
        r: the run.

    Returns:
        (label, text) rows; none for a run that never finished.
    """
    from engine.cost.run_cost import rows, run_cost

    return tuple(rows(run_cost(r.done))) if r.done else ()


def read_rows(r: RunLog) -> tuple[tuple[str, str], ...]:
    """A read's statistics (engine/reading): what both reports show instead of a
    generation's, with the app's formats (perplexity ',.2f', bits per byte '.3f').

    Args:
        r: a run that is a read (`engine.run.run_kind.is_read`).

    Returns:
        (label, text) rows: how it ended, tokens read, perplexity, bits per byte, GLTR
        ranks, what the text was read after, the window, speed and memory; only the
        first two (tokens read counted from its records) when no summary was recorded.
    """
    from engine.display.units import fmt_or_na, to_mb
    from engine.run.read_summary import BUCKET_NAMES
    from engine.sessions.run_outcome import finish_words

    d = r.done
    s = d.reading if d is not None else None
    end = finish_words(d.finish_reason) if d is not None else "no end was recorded"
    if s is None:
        return (("finish", end), ("tokens read", f"{len(r.tokens):,}"))
    if not s.complete:
        end += ": the figures cover what was read"
    ranks = " · ".join(
        f"{name}: {n:,} ({n / max(s.tokens, 1):.1%})"
        for name, n in zip(BUCKET_NAMES, s.rank_buckets, strict=False)
    )
    after = (
        f"the start token {s.start_token!r}"
        if s.start_token
        else f"{s.context_tokens:,} tokens of context (not scored)"
    )
    rows = [
        ("finish", end),
        ("tokens read", f"{s.tokens:,} ({s.text_bytes:,} bytes of text)"),
        ("perplexity", fmt_or_na(s.perplexity, ",.2f", "").strip()),
        ("bits per byte", fmt_or_na(s.bits_per_byte, ".3f", "").strip()),
        ("ranks (GLTR)", ranks),
        ("read after", after),
        (
            "window",
            f"sliding, {s.window:,} tokens" if s.window else "none: the whole text fit",
        ),
        ("read speed", f"{fmt_or_na(s.read_tps, ',.1f', 'tok/s')} ({s.read_s:.2f} s)"),
        ("peak memory", fmt_or_na(to_mb(d.peak_memory_bytes), ".1f", "MB")),
    ]
    if s.surprising:
        rows.append(
            (
                "most surprising",
                ", ".join(f"{t.text!r} (step {t.step})" for t in s.surprising[:5]),
            )
        )
    return tuple(rows)
