"""The per-record journal writer a run hands to the bridge (window and Compare).

It runs on the bridge thread; engine.sessions.run_writer.RunWriter does the
writing (journal a run, warn once, carry on), as for the command line.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.errors import LogitscopeError
from engine.sessions.journal import Journal
from engine.sessions.run_writer import RunWriter


def start_journaled_run(
    journal: Journal,
    prompt: str,
    settings: dict,
    model: dict | None,
    notify: Callable[[str], None],
    comparison: dict | None = None,
    conversation: dict | None = None,
    branch: dict | None = None,
):
    """Start a run in `journal`; returns (run_id, sink) or (None, None) if it cannot."""
    writer = RunWriter(journal, prompt, settings, model, notify, comparison, conversation, branch)
    return (writer.run_id, writer.record) if writer.run_id else (None, None)


def open_journal(session, notify: Callable[[str], None]) -> Journal | None:
    """The session's journal, created at its first run; None (after `notify`) when the
    history cannot be written."""
    try:
        return session.open_journal(lambda: Journal.create(title=session.journal_title))
    except LogitscopeError as e:
        notify(str(e))
        return None


def journal_session_run(session, state, conversation: dict | None, notify):
    """Start the playground's run `state` in the session's journal; sets its run id and
    returns the per-record writer, or None when the history cannot be written (the run
    still runs and shows; `notify` tells the person once where and what to do)."""
    from engine.run.records import to_dict

    journal = open_journal(session, notify)
    if journal is None:
        return None
    model = to_dict(state.model) if state.model else None
    branch = state.branch if state.branch and state.branch.get("parent") else None
    run_id, sink = start_journaled_run(
        journal,
        state.prompt,
        state.settings.to_dict(),
        model,
        notify,
        conversation=conversation,
        branch=branch,
    )
    session.name_run(state, run_id)
    return sink
