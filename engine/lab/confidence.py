"""Confidence against correctness: a question's row, the set's summary per signal, and
the sentence that says what the result means (no MLX here: the measurement is
engine/backends/mlx/calibrate.py; the figures engine/lab/confidence_metrics.py).

Every signal is oriented "higher = more confident" (an entropy enters negated), so one
AUROC reads the same for all: 0.5 is chance, 1 separates right from wrong perfectly. A
signal that is the same number on every answered question cannot rank them: it is "not
informative here" (informative False, AUROC None), not 0.5. Each AUROC has a 95 %
percentile-bootstrap interval (engine/lab/confidence_stats.py); with fewer than
FEW answers right or FEW wrong the sentence warns that the AUROCs are rough.

The risk-coverage curve and the abstain-20 % figure average over ties: at each coverage,
the expected accuracy when tied questions are kept in random order, so the question
order does not change them. Percentages in words are rounded half up (0.125 -> "13 %").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from typing import ClassVar

from engine.lab import confidence_metrics as cm
from engine.lab import confidence_stats as cs
from engine.lab.answer_meaning import Meaning
from engine.plain_data import PlainData

# signal key -> (name in words, whether it is a probability with a reliability diagram)
SIGNALS = {
    "mean_prob": ("the answer's arithmetic mean token probability", True),
    "geo_mean_prob": ("the answer's geometric mean probability", True),
    "min_prob": ("the answer's least likely token", True),
    "first_prob": ("the first answer token's probability", True),
    "first_entropy": ("the first step's entropy (negated)", False),
    "p_true": ("P(True), the model judging its own answer", True),
    "agreement": ("sample agreement", True),
    "largest_cluster": ("the largest sample cluster's share", True),
    "cluster_entropy": ("the samples' entropy over meanings (negated)", False),
}
SAMPLED = ("agreement", "largest_cluster", "cluster_entropy")  # need samples
FEW = 5  # fewer right or wrong answers than this: the sentence warns
BINS_RULE = (
    "10 equal-width bins over [0, 1], each [low, high) and the last one [0.9, 1] closed; "
    "ECE = sum over bins of count/n x |accuracy - mean confidence|"
)
TIES_RULE = (
    "ties averaged: at each coverage, the expected accuracy when tied questions are kept "
    "in random order"
)


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
    mean_logprob: float  # exp of it: the geometric mean probability
    min_logprob: float
    first_prob: float
    first_entropy: float  # nats, the first step's full distribution
    samples: tuple[str, ...]
    agreement: float | None  # share of samples meaning the greedy answer (answer_meaning)
    cluster_entropy: float | None  # nats over the samples' clusters of meaning
    clusters: int
    topic: str = ""
    lang: str = ""
    level: int = 0
    normalised: str = ""
    seconds: float = 0.0
    overridden: bool = False  # `correct` is a person's verdict, the opposite of the rule's
    cut: bool = False  # the greedy answer reached the token limit before it ended
    largest_share: float | None = None  # the largest sample cluster's share
    p_true: float | None = None  # P(True) renormalised over the True and False tokens
    p_true_raw: float | None = None  # the raw probability of the True tokens
    sample_ids: tuple[tuple[int, ...], ...] = ()  # each sample's answer token ids
    sample_stops: tuple[int | None, ...] = ()  # the stop token each sample ended at (None: none)

    def signal(self, key: str) -> float | None:
        """The signal `key` of SIGNALS, higher = more confident (None: not measured)."""
        if key == "mean_prob":
            lps = self.token_logprobs or (self.mean_logprob,)
            return sum(math.exp(lp) for lp in lps) / len(lps)
        if key == "geo_mean_prob":
            return math.exp(self.mean_logprob)
        if key == "min_prob":
            return math.exp(self.min_logprob)
        if key == "first_prob":
            return self.first_prob
        if key == "first_entropy":
            return -self.first_entropy
        if key == "p_true":
            return self.p_true
        if key == "agreement":
            return self.agreement
        if key == "largest_cluster":
            return self.largest_share
        if key == "cluster_entropy":
            return None if self.cluster_entropy is None else -self.cluster_entropy
        raise KeyError(key)


@dataclass(frozen=True)
class Bin(PlainData):
    """A reliability diagram's bin: [low, high), the last one closed (BINS_RULE)."""

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
    accuracy: tuple[float, ...]  # ... and the accuracy on those answered (ties averaged)
    accuracy_abstain_20: float | None  # the accuracy answering the 80 % most confident
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
    questions_per_minute: float = 0.0  # answering only: the load (load_seconds) not included
    overrides: tuple[int, ...] = ()  # the rows (positions in `rows`) a person re-judged
    cut: int = 0  # greedy answers that reached the token limit before they ended
    max_tokens: int = 0  # the token limit per answer
    load_seconds: float = 0.0  # the model's load, not in `seconds` (0: not measured here)
    rate_basis: str = "answering only; the model's load is not included"
    warning: str = ""  # fewer than FEW right or wrong answers (also in the sentence)
    bins_rule: str = BINS_RULE
    ties_rule: str = TIES_RULE
    kind: ClassVar[str] = "calibrate"
    nested: ClassVar[dict] = {"signals": SignalSummary, "rows": QuestionRow}


RULE = (
    "correct when an accepted answer, normalised (accents and punctuation dropped, lower "
    "case, articles removed), occurs as whole words in the answer's first line"
)


def cluster_stats(
    greedy: str, samples: list[str], question: str = ""
) -> tuple[float | None, float | None, int, float | None]:
    """The samples grouped by meaning (engine/lab/answer_meaning.py, the cheap stand-in
    for semantic entropy's bidirectional entailment), the greedy answer's cluster first.

    Returns:
        (the share of samples in the greedy answer's cluster, the entropy over the
        clusters' shares in nats, the number of clusters the samples fill, the largest
        cluster's share); (None, None, 0, None) without samples.
    """
    if not samples:
        return None, None, 0, None
    clusters = [len(c) for c in Meaning(question).clusters(samples, [greedy])]
    n = len(samples)
    entropy = -sum(c / n * math.log(c / n) for c in clusters if c)
    return clusters[0] / n, max(entropy, 0.0), sum(1 for c in clusters if c), max(clusters) / n


def summarise_signal(key: str, rows: list[QuestionRow]) -> SignalSummary:
    """One signal's AUROC, reliability diagram, ECE and risk-coverage curve on `rows`."""
    name, probability = SIGNALS[key]
    kept = [(r.signal(key), r.correct) for r in rows if r.signal(key) is not None]
    scores, correct = [s for s, _ in kept], [c for _, c in kept]
    bins, ece = ((), None)
    if probability and scores:
        raw, ece = cm.reliability(scores, correct)
        bins = tuple(Bin(b.low, b.high, b.count, b.confidence, b.accuracy) for b in raw)
    curve = cs.risk_coverage_ties_averaged(scores, correct)
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


def warning_for(correct: list[bool]) -> str:
    """The warning when too few answers are right or wrong for a steady AUROC ("" if not)."""
    right, wrong = sum(correct), len(correct) - sum(correct)
    if not right or not wrong or (right >= FEW and wrong >= FEW):
        return ""

    def count(n: int, kind: str) -> str:
        return f"{n} {kind} answer{'' if n == 1 else 's'}"

    few = count(right, "right") if right < FEW else count(wrong, "wrong")
    if right < FEW and wrong < FEW:
        few = f"{count(right, 'right')} and {count(wrong, 'wrong')}"
    return (
        f"Only {few}: with fewer than {FEW} right or {FEW} wrong the AUROCs are "
        "rough (see their 95 % intervals)."
    )


def _auroc_words(s: SignalSummary, said: str = "95 % interval ") -> str:
    """The AUROC with its interval, in words ("0.92 (95 % interval 0.73–1.00)")."""
    text = cs.half_up(s.auroc, 2)
    if s.auroc_low is not None and s.auroc_high is not None:
        text += f" ({said}{cs.half_up(s.auroc_low, 2)}–{cs.half_up(s.auroc_high, 2)})"
    return text


def sentence(
    accuracy: float | None,
    signals: tuple[SignalSummary, ...],
    why: str,
    *,
    answered: int = 0,
    right: int = 0,
    cut: int = 0,
    max_tokens: int = 0,
    warning: str = "",
) -> str:
    """What the result says, computed from it."""
    if accuracy is None:
        return "No question was answered."
    head = f"The model answered {cs.pct(accuracy)} of the questions right"
    head += f" ({right} of {answered})." if answered else "."
    if cut:
        limit = f"the {max_tokens}-token limit" if max_tokens else "the token limit"
        head += (
            f" {cut} of the {answered} answers {'was' if cut == 1 else 'were'} cut at "
            f"{limit} before {'it' if cut == 1 else 'they'} ended."
        )
    if why:
        return f"{head} How well confidence separates right from wrong cannot be said: {why}."
    ranked = sorted(
        (s for s in signals if s.auroc is not None and s.informative), key=lambda s: -s.auroc
    )
    idle = [s.name for s in signals if not s.informative]
    tail = ""
    if idle:
        tail += (
            f" {'; '.join(idle)} {'is' if len(idle) == 1 else 'are'} the same on every "
            "question: not informative here."
        )
    if warning:
        tail += f" {warning}"
    if not ranked:
        return head + tail
    best = ranked[0]
    text = (
        f"{head} On this model, {best.name} separates right from wrong answers "
        f"with AUROC {_auroc_words(best)}"
    )
    mean = next((s for s in ranked if s.key == "mean_prob" and s is not best), None)
    other = mean or (ranked[1] if len(ranked) > 1 else None)
    if other is not None:
        text += f"; {other.name} with {_auroc_words(other, '')}"
    text += "; 0.5 is chance."
    if best.accuracy_abstain_20 is not None:
        text += (
            f" Abstaining on its least confident 20 % by {best.name} gives "
            f"{cs.pct(best.accuracy_abstain_20)} accuracy on the rest."
        )
    return text + tail


# ConfidenceResult fields that summarise() computes from the rows (the rest it is given)
COMPUTED = frozenset(
    ("rule", "answered", "accuracy", "signals", "rows", "why", "sentence", "overrides")
    + ("cut", "warning", "bins_rule", "ties_rule")
)


def summarise(rows: list[QuestionRow], **fields) -> ConfidenceResult:
    """The set's result from its rows; `fields`: the ConfidenceResult fields not
    computed here (model, questions_file, samples, temperature, asked, ...); the
    result's `overrides` are the rows marked `overridden`."""
    fields = {k: v for k, v in fields.items() if k not in COMPUTED}
    correct = [r.correct for r in rows]
    accuracy = sum(correct) / len(rows) if rows else None
    asked_true = not rows or any(r.p_true is not None for r in rows)
    keys = [
        k
        for k in SIGNALS
        if (fields.get("samples", 0) or k not in SAMPLED) and (k != "p_true" or asked_true)
    ]
    signals = tuple(summarise_signal(k, rows) for k in keys)
    why = cm.why_undefined(correct)
    cut = sum(r.cut for r in rows)
    warning = "" if why else warning_for(correct)
    words = sentence(
        accuracy,
        signals,
        why,
        answered=len(rows),
        right=sum(correct),
        cut=cut,
        max_tokens=fields.get("max_tokens", 0),
        warning=warning,
    )
    return ConfidenceResult(
        rule=RULE,
        answered=len(rows),
        accuracy=accuracy,
        signals=signals,
        rows=tuple(rows),
        why=why,
        sentence=words,
        overrides=tuple(i for i, r in enumerate(rows) if r.overridden),
        cut=cut,
        warning=warning,
        **fields,
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
