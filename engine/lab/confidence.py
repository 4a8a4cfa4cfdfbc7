"""Confidence against correctness: a question's row, the set's summary per signal, and
the sentence that says what the result means (no MLX here: the measurement is
engine/backends/mlx/calibrate.py; the figures engine/lab/confidence_metrics.py).

Every signal is oriented "higher = more confident" (an entropy enters negated), so one
AUROC reads the same for all: 0.5 is chance, 1 separates right from wrong perfectly.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from engine.lab import confidence_metrics as cm
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
    return SignalSummary(
        key=key,
        name=name,
        auroc=cm.auroc(scores, correct),
        ece=ece,
        bins=bins,
        coverage=tuple(c for c, _ in curve),
        accuracy=tuple(a for _, a in curve),
        accuracy_abstain_20=cm.accuracy_at(curve, 0.8),
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
    computed here (model, questions_file, samples, temperature, asked, ...)."""
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
        **fields,
    )
