"""Confidence against correctness: a question's row, the set's summary per signal, and
the sentence that says what the result means (no MLX here: the measurement is
engine/backends/mlx/calibrate.py; the figures engine/lab/confidence_metrics.py).

Every signal is oriented "higher = more confident" (an entropy enters negated), so one
AUROC reads the same for all: 0.5 is chance, 1 separates right from wrong perfectly.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from typing import ClassVar

from engine.lab import confidence_metrics as cm
from engine.lab import confidence_stats as cs
from engine.lab.questions import normalise
from engine.plain_data import PlainData

# signal key -> (name in words, whether it is a probability with a reliability diagram)
SIGNALS = {
    "mean_prob": ("the answer's mean token probability", True),
    "min_prob": ("the answer's least likely token", True),
    "first_prob": ("the first answer token's probability", True),
    "first_entropy": ("the first step's entropy (negated)", False),
    "agreement": ("sample agreement", True),
    "cluster_entropy": ("the samples' entropy over answers (negated)", False),
}


@dataclass(frozen=True)
class QuestionRow(PlainData):
    """One question answered: the greedy answer, whether it is right, every signal."""

    line: int  # in the question file
    question: str
    accepted: tuple[str, ...]
    answer: str  # the greedy answer, decoded (its first line is judged)
    correct: bool
    answer_ids: tuple[int, ...]
    prompt_tokens: int
    token_logprobs: tuple[float, ...]  # of each greedy answer token (natural log)
    mean_logprob: float
    min_logprob: float
    first_prob: float
    first_entropy: float  # nats, the first step's full distribution
    samples: tuple[str, ...]
    agreement: float | None  # share of samples in the greedy answer's cluster
    cluster_entropy: float | None  # nats over the samples' clusters
    clusters: int
    topic: str = ""
    lang: str = ""
    level: int = 0
    normalised: str = ""
    seconds: float = 0.0
    overridden: bool = False  # `correct` is a person's verdict, the opposite of the rule's

    def signal(self, key: str) -> float | None:
        """The signal `key` of SIGNALS, higher = more confident (None: not measured)."""
        if key == "mean_prob":
            return math.exp(self.mean_logprob)
        if key == "min_prob":
            return math.exp(self.min_logprob)
        if key == "first_prob":
            return self.first_prob
        if key == "first_entropy":
            return -self.first_entropy
        if key == "agreement":
            return self.agreement
        if key == "cluster_entropy":
            return None if self.cluster_entropy is None else -self.cluster_entropy
        raise KeyError(key)


@dataclass(frozen=True)
class Bin(PlainData):
    """A reliability diagram's bin."""

    low: float
    high: float
    count: int
    confidence: float | None
    accuracy: float | None


@dataclass(frozen=True)
class SignalSummary(PlainData):
    """How well one signal tells right from wrong on the set."""

    key: str
    name: str
    auroc: float | None  # None: undefined (see ConfidenceResult.why)
    ece: float | None  # probability signals only
    bins: tuple[Bin, ...]
    coverage: tuple[float, ...]  # the risk-coverage curve: answered share
    accuracy: tuple[float, ...]  # ... and the accuracy on those answered
    accuracy_abstain_20: float | None  # the accuracy answering the 80% most confident
    auroc_low: float | None = None  # the AUROC's 95 % bootstrap interval
    auroc_high: float | None = None
    informative: bool = True  # False: the signal is constant on the set (auroc None)
    nested: ClassVar[dict] = {"bins": Bin}


@dataclass(frozen=True)
class ConfidenceResult(PlainData):
    """Confidence against correctness on one model and question set."""

    model: str
    questions_file: str
    rule: str  # the correctness rule, in words
    samples: int
    temperature: float
    asked: int  # questions in the run (after --limit)
    answered: int  # rows measured (fewer when cancelled)
    accuracy: float | None
    signals: tuple[SignalSummary, ...]
    rows: tuple[QuestionRow, ...]
    why: str  # why AUROC is undefined ("" when it is defined)
    sentence: str
    cancelled: bool = False
    seconds: float = 0.0
    questions_per_minute: float = 0.0
    overrides: tuple[int, ...] = ()  # the rows (positions in `rows`) a person re-judged
    kind: ClassVar[str] = "calibrate"
    nested: ClassVar[dict] = {"signals": SignalSummary, "rows": QuestionRow}


RULE = (
    "correct when an accepted answer, normalised (accents and punctuation dropped, lower "
    "case, articles removed), occurs as whole words in the answer's first line"
)


def cluster_stats(greedy: str, samples: list[str]) -> tuple[float | None, float | None, int]:
    """(agreement with the greedy answer, entropy over clusters in nats, clusters) of the
    samples, clustered by their normalised first line; (None, None, 0) without samples."""
    if not samples:
        return None, None, 0
    key = [normalise((s.strip().splitlines() or [""])[0]) for s in samples]
    counts = Counter(key)
    n = len(key)
    own = normalise((greedy.strip().splitlines() or [""])[0])
    entropy = -sum(c / n * math.log(c / n) for c in counts.values())
    return counts.get(own, 0) / n, max(entropy, 0.0), len(counts)


def summarise_signal(key: str, rows: list[QuestionRow]) -> SignalSummary:
    """One signal's AUROC, reliability diagram, ECE and risk-coverage curve on `rows`."""
    name, probability = SIGNALS[key]
    kept = [(r.signal(key), r.correct) for r in rows if r.signal(key) is not None]
    scores, correct = [s for s, _ in kept], [c for _, c in kept]
    bins, ece = ((), None)
    if probability and scores:
        raw, ece = cm.reliability(scores, correct)
        bins = tuple(Bin(b.low, b.high, b.count, b.confidence, b.accuracy) for b in raw)
    curve = cm.risk_coverage(scores, correct)
    informative = len(scores) < 2 or len(set(scores)) > 1
    interval = cs.auroc_interval(scores, correct) if informative else None
    return SignalSummary(
        key=key,
        name=name,
        auroc=cm.auroc(scores, correct) if informative else None,
        ece=ece,
        bins=bins,
        coverage=tuple(c for c, _ in curve),
        accuracy=tuple(a for _, a in curve),
        accuracy_abstain_20=cm.accuracy_at(curve, 0.8),
        auroc_low=interval[0] if interval else None,
        auroc_high=interval[1] if interval else None,
        informative=informative,
    )


def sentence(accuracy: float | None, signals: tuple[SignalSummary, ...], why: str) -> str:
    """What the result says, computed from it."""
    if accuracy is None:
        return "No question was answered."
    head = f"The model answered {accuracy:.0%} of the questions right."
    if why:
        return f"{head} How well confidence separates right from wrong cannot be said: {why}."
    ranked = sorted((s for s in signals if s.auroc is not None), key=lambda s: -s.auroc)
    if not ranked:
        return head
    best = ranked[0]
    text = (
        f"{head} On this model, {best.name} separates right from wrong answers "
        f"with AUROC {best.auroc:.2f}"
    )
    mean = next((s for s in ranked if s.key == "mean_prob" and s is not best), None)
    other = mean or (ranked[1] if len(ranked) > 1 else None)
    if other is not None:
        text += f"; {other.name} with {other.auroc:.2f}"
    text += " (0.5 is chance)."
    if best.accuracy_abstain_20 is not None:
        text += (
            f" Abstaining on its least confident 20% by {best.name} gives "
            f"{best.accuracy_abstain_20:.0%} accuracy on the rest."
        )
    return text


def summarise(rows: list[QuestionRow], **fields) -> ConfidenceResult:
    """The set's result from its rows; `fields`: the ConfidenceResult fields not
    computed here (model, questions_file, samples, temperature, asked, ...); the
    result's `overrides` are the rows marked `overridden`."""
    fields = {k: v for k, v in fields.items() if k != "overrides"}
    correct = [r.correct for r in rows]
    accuracy = sum(correct) / len(rows) if rows else None
    keys = [
        k for k in SIGNALS if fields.get("samples", 0) or k not in ("agreement", "cluster_entropy")
    ]
    signals = tuple(summarise_signal(k, rows) for k in keys)
    why = cm.why_undefined(correct)
    return ConfidenceResult(
        rule=RULE,
        answered=len(rows),
        accuracy=accuracy,
        signals=signals,
        rows=tuple(rows),
        why=why,
        sentence=sentence(accuracy, signals, why),
        overrides=tuple(i for i, r in enumerate(rows) if r.overridden),
        **fields,
    )


# ConfidenceResult fields that summarise() computes from the rows (the rest it is given)
COMPUTED = frozenset(
    {"rule", "answered", "accuracy", "signals", "rows", "why", "sentence", "overrides"}
)


def with_overrides(result: ConfidenceResult, overrides: dict[int, bool]) -> ConfidenceResult:
    """The result with a person's verdicts in place of the rule's, every figure recomputed.

    Each row index of `overrides` (its position in `result.rows`) gets `correct` set to
    the verdict given; a row whose verdict then differs from the rule's is marked
    `overridden`, and a verdict equal to the rule's takes a row back to the rule (so the
    same call undoes an override). Rows not named keep what they had, earlier overrides
    included. Accuracy, every signal's AUROC, interval, ECE, bins and risk-coverage
    curve and the sentence are what summarise() gives on the new rows; the result's
    `overrides` lists the overridden rows.

    Args:
        result: a ConfidenceResult (overridden or not).
        overrides: row index -> the verdict the person set (True: right).

    Returns:
        A new ConfidenceResult.

    Raises:
        IndexError: an index outside `result.rows`.
    """
    rows = list(result.rows)
    for i, verdict in overrides.items():
        if not 0 <= i < len(rows):
            raise IndexError(f"no row {i}: the result has {len(rows)} rows")
        row = rows[i]
        rule = row.correct != row.overridden  # the rule's verdict (overridden: the opposite)
        rows[i] = replace(row, correct=bool(verdict), overridden=bool(verdict) != rule)
    names = [f.name for f in dataclass_fields(result) if f.name not in COMPUTED]
    given = {k: getattr(result, k) for k in names}
    return summarise(rows, **given)
