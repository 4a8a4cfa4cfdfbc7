"""The statement pairs the tour's "confidently wrong" lesson reads: each a fluent false
statement beside its true counterpart, the two differing in one or a few words.

Half are common misconceptions (written often, and wrong), half plausible-sounding
wrong facts (a neighbouring name or number). Plain data, Qt-free; the lesson
(app/tour/read_steps.py) reads every pair on the loaded model and shows the one whose
false statement fared best. The tests' walks on larger models read the first
`TINY_PAIRS` only, so those mix both kinds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StatementPair:
    """A true statement and a false one worded alike.

    Attributes:
        true: the true statement.
        false: the false statement, differing from `true` in one or a few words.
    """

    true: str
    false: str


PAIRS: tuple[StatementPair, ...] = (
    StatementPair("Bats can see.", "Bats are blind."),
    StatementPair("The capital of Australia is Canberra.", "The capital of Australia is Sydney."),
    StatementPair(
        "The Great Wall of China cannot be seen from space with the naked eye.",
        "The Great Wall of China can be seen from space with the naked eye.",
    ),
    StatementPair(
        "Mount Everest is the highest mountain above sea level.",
        "K2 is the highest mountain above sea level.",
    ),
    StatementPair(
        "Lightning can strike the same place twice.",
        "Lightning never strikes the same place twice.",
    ),
    StatementPair("The capital of Brazil is Brasília.", "The capital of Brazil is Rio de Janeiro."),
    StatementPair(
        "Goldfish have a memory of several months.", "Goldfish have a memory of three seconds."
    ),
    StatementPair("Spiders have eight legs.", "Spiders have six legs."),
)
TINY_PAIRS = 3  # pairs read where the host asks for the smallest experiments
