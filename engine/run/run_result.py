"""RunResult: one run's records folded into its state, the one fold every consumer
uses (the window's and Compare's RunState extend it; a journal's RunLog builds one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.run.records import (
    DoneRecord,
    ErrorRecord,
    ModelRecord,
    PrefillRecord,
    Record,
    TokenRecord,
)


def add_token(tokens: list[TokenRecord], record: TokenRecord) -> int:
    """Append a token record to a run's tokens.

    A record for a step already held supersedes it and every later one (a backend
    that learns more after streaming re-sends its tokens from that step).

    Args:
        tokens: the run's token records, indexed by step; changed in place.
        record: the new token record.

    Returns:
        The first step that changed.
    """
    if record.step < len(tokens):
        del tokens[record.step :]
    tokens.append(record)
    return record.step


@dataclass
class RunResult:
    """One run's records folded into its state: the one fold every consumer uses
    (the window's and Compare's RunState extend it; a journal's RunLog builds one).
    A token record for a step already held supersedes it (see `add_token`)."""

    model: ModelRecord | None = None
    tokens: list[TokenRecord] = field(default_factory=list)
    done: DoneRecord | None = None
    error: ErrorRecord | None = None
    prefill: PrefillRecord | None = None  # the latest

    def add(self, record: Record) -> None:
        """Fold one record into the run's state.

        Progress, inspect and lab records are ignored.

        Args:
            record: any record.
        """
        if isinstance(record, TokenRecord):
            self.add_tokens([record])
        elif isinstance(record, DoneRecord):
            self.done = record
        elif isinstance(record, ErrorRecord):
            self.error = record
        elif isinstance(record, ModelRecord):
            self.model = record
        elif isinstance(record, PrefillRecord):
            self.prefill = record

    def add_tokens(self, records: list[TokenRecord]) -> None:
        """Fold several token records in order (each as `add_token` does).

        Args:
            records: token records.
        """
        for r in records:
            add_token(self.tokens, r)

    @property
    def text(self) -> str:
        """The answer so far: every token's text joined (thinking tokens included)."""
        return "".join(t.text for t in self.tokens)
