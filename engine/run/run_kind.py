"""A run's kind, as the views and the exports need it: which of its steps it generated
(a branch, or a sampled future, inherits its parent's first steps) and whether it is a
read (a text scored through the model, engine/reading) rather than a generation.

A branch's records begin with its parent's first K token records (`with_prefix` in
engine/run/continuation.py), stamped 0 s with no latency: the run reused them from the KV
cache, it did not generate them. Its speed figures, its throughput curve and the CSV's
timings count the steps from K on only; `first_generated_step` is the one definition
of K every one of them uses.
"""

from __future__ import annotations

from engine.run.records import DoneRecord, TokenRecord


def first_generated_step(branch: dict | None) -> int:
    """The first answer step a run generated itself.

    Args:
        branch: the run's branch field ({"parent", "step", "kind", ...}), or None for
            a run that is not a branch.

    Returns:
        The branch step K (steps 0..K-1 are the parent's, copied in); 0 for a plain run.
    """
    return (branch or {}).get("step") or 0


def is_inherited(step: int, branch: dict | None) -> bool:
    """Whether answer step `step` of a run was copied from its parent, not generated.

    Args:
        step: an answer step of the run.
        branch: the run's branch field, or None.

    Returns:
        True for a branch's step before its branch point.
    """
    return step < first_generated_step(branch)


def generated(tokens: list[TokenRecord], branch: dict | None) -> list[TokenRecord]:
    """The token records a run generated itself: a branch's from its branch point on.

    Args:
        tokens: the run's token records, indexed by step.
        branch: the run's branch field, or None.

    Returns:
        `tokens` without the inherited prefix (the same list's items, in order).
    """
    return tokens[first_generated_step(branch) :]


def is_read(tokens: list[TokenRecord], done: DoneRecord | None) -> bool:
    """Whether a run is a read: a given text scored through the model, not generated.

    Args:
        tokens: the run's token records.
        done: its DoneRecord, or None while it runs (or if it never finished).

    Returns:
        True when its tokens were read (`TokenRecord.read`) or its DoneRecord carries
        a read's summary.
    """
    return bool(tokens and tokens[0].read) or (done is not None and done.reading is not None)


def answer_tokens(tokens: list[TokenRecord]) -> int:
    """The one count of a run's answer tokens, every view's (the status line, the context
    chart, its explanation, the exports): its steps without the end-of-sequence step,
    which adds nothing to the answer. The engine's DoneRecord.generated_tokens counts
    the same.

    Args:
        tokens: the run's token records.

    Returns:
        How many of them are not the end-of-sequence step.
    """
    return sum(1 for t in tokens if not t.eos)
