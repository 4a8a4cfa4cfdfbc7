"""Runs the session makes in series for one request: Sample N's futures from a branch
point, and the cold-vs-cached A/B of one turn."""

from __future__ import annotations

from dataclasses import dataclass

from app.session.conversation import Answer


@dataclass
class SampleBatch:
    """Sample N: the futures still to run from one branch point of one answer."""

    parent: Answer
    step: int
    seeds: list  # the seeds of the samples still to run, in order
    total: int

    @property
    def started(self) -> int:
        return self.total - len(self.seeds)


@dataclass
class ABTest:
    """Cold vs cached: the same turn run without the prompt cache, then with it."""

    turn: int
    cold: object = None  # DoneRecord of the cold run
    cached: object = None  # DoneRecord of the cached run
