"""RunWriter: one run being written to a journal — journal it, warn once, carry on.

Used by every writer of runs (the command line, the playground, Compare): if the
history cannot be written (a read-only or full disk), the run goes on and shows,
`notify(message)` is called once, and the rest of the run is not journaled.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.errors import LogitscopeError


class RunWriter:
    """Journals one run's records into `journal`; `run_id` is None when it cannot."""

    def __init__(
        self,
        journal,
        prompt: str,
        settings: dict,
        model: dict | None,
        notify: Callable[[str], None],
        comparison: dict | None = None,
        conversation: dict | None = None,
        branch: dict | None = None,
    ):
        """Start the run in `journal` (a Journal, or None: nothing is written).

        Args:
            journal: the session's Journal, or None.
            prompt: the run's prompt text.
            settings: its SamplingSettings as a dict.
            model: its ModelRecord as a dict, if known.
            notify: called once with a message when the history cannot be written.
            comparison: the Compare lane it belongs to, if any.
            conversation: its conversation field (id, turn, earlier messages), if any.
            branch: its branch field (parent run, step, kind), if it is a branch.
        """
        self.journal, self.notify, self.run_id = journal, notify, None
        if journal is None:
            return
        try:
            self.run_id = journal.start_run(
                prompt,
                settings,
                model,
                comparison=comparison,
                conversation=conversation,
                branch=branch,
            )
        except LogitscopeError as e:
            self._give_up(e)

    def record(self, record) -> None:
        """Journal one record (progress records are not kept); thread-safe per run.

        After the history fails once, `notify` has been called and nothing more is
        written.

        Args:
            record: an engine record.
        """
        if self.journal is None or self.run_id is None or record.type == "progress":
            return
        try:
            self.journal.record(self.run_id, record)
        except LogitscopeError as e:
            self._give_up(e)

    def _give_up(self, error: Exception) -> None:
        self.journal = None
        self.notify(str(error))
