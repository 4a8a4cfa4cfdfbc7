"""How well a confidence signal tells right answers from wrong ones: AUROC, the
reliability diagram and its expected calibration error, and the risk-coverage curve.

Plain Python on lists (no NumPy needed; the tests recompute every figure with NumPy
and scikit-learn's definitions). A signal is "higher means more confident"; a
probability-like signal (in [0, 1]) gets a reliability diagram, any signal an AUROC
and a risk-coverage curve. Undefined figures are None, with the reason in words
(`why_undefined`), never NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

BINS = 10  # reliability diagram bins over [0, 1]


def auroc(scores: list[float], correct: list[bool]) -> float | None:
    """P(a random right answer scores above a random wrong one), ties counted half
    (the Mann-Whitney U statistic over both counts); None without both kinds."""
    pos = sum(correct)
    neg = len(correct) - pos
    if pos == 0 or neg == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):  # average ranks over ties
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, c in zip(ranks, correct, strict=True) if c)
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin of the reliability diagram: [low, high), its count, mean confidence and accuracy."""

    low: float
    high: float
    count: int
    confidence: float | None  # None: an empty bin
    accuracy: float | None


def reliability(conf: list[float], correct: list[bool], bins: int = BINS):
    """The reliability diagram (equal-width bins over [0, 1], the last one closed) and
    the expected calibration error: sum over bins of count/n x |accuracy - confidence|.

    Returns:
        (tuple of ReliabilityBin, ECE or None for an empty set).
    """
    members: list[list[int]] = [[] for _ in range(bins)]
    for i, c in enumerate(conf):
        members[min(bins - 1, max(0, int(c * bins)))].append(i)
    out, ece, n = [], 0.0, len(conf)
    for b, idx in enumerate(members):
        if idx:
            mc = sum(conf[i] for i in idx) / len(idx)
            acc = sum(correct[i] for i in idx) / len(idx)
            ece += len(idx) / n * abs(acc - mc)
            out.append(ReliabilityBin(b / bins, (b + 1) / bins, len(idx), mc, acc))
        else:
            out.append(ReliabilityBin(b / bins, (b + 1) / bins, 0, None, None))
    return tuple(out), (ece if n else None)


def risk_coverage(scores: list[float], correct: list[bool]) -> tuple[tuple[float, float], ...]:
    """Accuracy when the model answers only its most confident questions: for k = 1..n
    kept (most confident first; ties broken by question order), (coverage k/n, accuracy
    of those k). Abstaining on the least confident x% is the point at coverage 1 - x."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    out, right = [], 0
    for k, i in enumerate(order, 1):
        right += correct[i]
        out.append((k / len(order), right / k))
    return tuple(out)


def accuracy_at(curve: tuple[tuple[float, float], ...], coverage: float) -> float | None:
    """The curve's accuracy at the smallest coverage that reaches `coverage`."""
    for cov, acc in curve:
        if cov >= coverage - 1e-12:
            return acc
    return None


def why_undefined(correct: list[bool]) -> str:
    """Why AUROC cannot be computed for this set, in words ("" when it can)."""
    if not correct:
        return "no questions were answered, so there is nothing to tell apart"
    if all(correct):
        return "every answer was right: there is no wrong answer to tell apart (AUROC undefined)"
    if not any(correct):
        return "no answer was right: there is no right answer to tell apart (AUROC undefined)"
    return ""
