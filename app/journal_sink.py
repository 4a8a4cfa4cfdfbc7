"""The per-record journal writer a run hands to the bridge (window and Compare).

It runs on the bridge thread. If the history cannot be written (read-only or
full disk), the run goes on and shows; `notify(message)` is called once, and
the rest of the run is not journaled.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.errors import LogitscopeError
from engine.sessions.journal import Journal


def start_journaled_run(
    journal: Journal,
    prompt: str,
    settings: dict,
    model: dict | None,
    notify: Callable[[str], None],
    comparison: dict | None = None,
    conversation: dict | None = None,
):
    """Start a run in `journal`; returns (run_id, sink) or (None, None) if it cannot."""
    try:
        run_id = journal.start_run(
            prompt, settings, model, comparison=comparison, conversation=conversation
        )
    except LogitscopeError as e:
        notify(str(e))
        return None, None
    failed: list[Exception] = []

    def sink(record) -> None:
        if failed:
            return
        try:
            journal.record(run_id, record)
        except LogitscopeError as e:
            failed.append(e)
            notify(str(e))

    return run_id, sink


def open_journal(session, notify: Callable[[str], None]) -> Journal | None:
    """The session's journal, created at its first run; None (after `notify`) when the
    history cannot be written."""
    if session.journal is None:
        try:
            session.journal = Journal.create()
        except LogitscopeError as e:
            notify(str(e))
    return session.journal


def journal_session_run(session, state, conversation: dict | None, notify):
    """Start the playground's run `state` in the session's journal; sets its run id and
    returns the per-record writer, or None when the history cannot be written (the run
    still runs and shows; `notify` tells the person once where and what to do)."""
    from engine.records import to_dict

    journal = open_journal(session, notify)
    if journal is None:
        return None
    model = to_dict(state.model) if state.model else None
    run_id, sink = start_journaled_run(
        journal, state.prompt, state.settings.to_dict(), model, notify, conversation=conversation
    )
    state.run_id = run_id
    return sink
