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
        run_id = journal.start_run(prompt, settings, model, comparison=comparison,
                                   conversation=conversation)  # fmt: skip
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


def journal_window_run(win, prompt: str, settings, conversation: dict | None = None):
    """Start the playground's run in its session journal (created at the first run);
    return the per-record writer, or None when the history cannot be written (the run
    still runs and shows; the user is told once where and what to do)."""
    from engine.records import to_dict

    try:
        if win.journal is None:
            win.journal = Journal.create()
    except LogitscopeError as e:
        win._on_journal_failed(str(e))
        return None
    model = to_dict(win.model_record) if win.model_record else None
    run_id, sink = start_journaled_run(win.journal, prompt, settings.to_dict(), model,
                                       win.journal_failed.emit,
                                       conversation=conversation)  # fmt: skip
    win.state.run_id = run_id
    return sink
