"""Hybrid inference: a small model answers, a larger one only when the small one is not
confident enough. The arithmetic of routing, without MLX and without Qt (running the two
models: engine/backends/mlx/route_runs.py; the command: engine/cli/lab_route.py).

The cascade. The small model answers a question and measures one confidence signal of
engine/lab/confidence.SIGNALS (each "higher = more confident"; entropies enter
negated). When the signal is below the person's threshold the question is escalated: the
larger model answers it instead. The reason is said in words, from the numbers:
"min token p 0.08 < 0.20: escalated", "min token p 0.41 ≥ 0.20: kept". A large model that
fails leaves the small model's answer, marked as not escalated, with the error.

The measurement. Both models answer every question of a set once (greedy); then, for
every threshold that changes the decision (each distinct value of the signal, and one
above them all that escalates every question), the cascade's accuracy, the share of
questions it escalates and its cost: the small model's time on every question plus the
large model's on the escalated ones, against the large model answering all of them
alone. Energy is that time x the machine's watts (measured counters are not used: the
two models share one machine, so energy follows time), money the energy x the kWh price
(engine/cost/costs.py).

Beside the curve: the random router (it escalates a share p of the questions at random:
its expected accuracy is the straight line small + p x (large - small)) and the oracle
(it escalates first the questions only the large model answers right, then those both
answer alike, last those only the small one answers right). APGR, as RouteLLM defines
it (Ong et al., 2024), is the area under PGR = (accuracy - small) / (large - small)
over the escalated share from 0 to 1, here the trapezoid over the curve's points
(between two thresholds a person can mix them at random, which draws the straight line
between their points); the random router's APGR is 0.5. It is undefined when the large
model is not the more accurate one: there is no gap to recover.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from engine.cost.costs import electricity_cost
from engine.errors import SettingsError
from engine.lab.confidence import SAMPLED, SIGNALS
from engine.lab.confidence_stats import pct
from engine.lab.params import CalibrateParams
from engine.plain_data import PlainData

TARGET = 0.95  # the share of the large model's accuracy the cheapest threshold must keep
DEFAULT_SIGNAL = "min_prob"
ENTROPY_FLOOR = -50.0  # a negated entropy threshold: nats, from this to 0
# signal key -> its short label in a reason ("min token p 0.08 < 0.20: escalated")
SHORT = {
    "mean_prob": "mean token p",
    "geo_mean_prob": "geometric mean token p",
    "min_prob": "min token p",
    "first_prob": "first token p",
    "first_entropy": "negated first-step entropy",
    "p_true": "P(True)",
    "agreement": "sample agreement",
    "largest_cluster": "largest cluster share",
    "cluster_entropy": "negated cluster entropy",
}
APGR_RULE = (
    "PGR = (accuracy - small accuracy) / (large accuracy - small accuracy) at each "
    "threshold; APGR = the trapezoid area under PGR over the escalated share from 0 to 1"
)


def label(signal: str) -> str:
    """The signal's short label in reasons ("min token p")."""
    return SHORT.get(signal, signal)


def is_probability(signal: str) -> bool:
    """True for a probability signal (thresholds 0..1), False for a negated entropy."""
    return SIGNALS[signal][1]


def check_signal(signal: str) -> str:
    """`signal` when it is one of SIGNALS.

    Raises:
        SettingsError: an unknown signal, in one sentence naming the known ones.
    """
    if signal not in SIGNALS:
        known = ", ".join(SIGNALS)
        raise SettingsError(f"--signal takes one of {known}, not {signal!r}")
    return signal


def check_threshold(signal: str, threshold: float, name: str | None = None) -> float:
    """`threshold` when it is a number in the signal's range: 0..1 for a probability,
    ENTROPY_FLOOR..0 for a negated entropy (nats).

    Raises:
        SettingsError: out of range or not a finite number, in one sentence.
    """
    low, high = (0.0, 1.0) if is_probability(signal) else (ENTROPY_FLOOR, 0.0)
    ok = isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
    if not ok or not math.isfinite(threshold) or not low <= threshold <= high:
        kind = "a probability" if is_probability(signal) else "a negated entropy in nats"
        raise SettingsError(
            f"{name or '--threshold for ' + label(signal)} is {kind} from {low:g} to "
            f"{high:g}, not {threshold!r}"
        )
    return float(threshold)


def model_key(spec: str) -> str:
    """What a model spec names, for telling two specs apart without loading either: the
    resolved folder or file when it exists (as itself or under the models folder), else
    the spec as typed."""
    from pathlib import Path

    from engine.store.paths import models_dir

    for path in (Path(spec).expanduser(), models_dir() / spec):
        if path.exists():
            return str(path.resolve())
    return spec.strip()


@dataclass(frozen=True)
class RouteParams:
    """A cascade (`threshold` given) or its measurement on a question set (None).

    Attributes:
        small: the small model's spec (a folder, a .gguf file or a name).
        large: the larger model's spec (another model).
        questions: a JSONL or CSV question file; None: the bundled set.
        limit: only the first this many questions; None: all.
        signal: the small model's confidence signal (a key of SIGNALS).
        threshold: escalate below it (the cascade); None: measure every threshold.
        samples: the small model's sampled answers per question: a sampled signal
            (agreement, cluster entropy) needs at least 1; None: 5 for those, else 0.
        max_tokens: most tokens per answer (as calibrate: its default and range).
        seed: the samples' random seed.
        journal: journal both models' answers as runs in a "Routing" History session.
    """

    small: str | None
    large: str | None
    questions: str | None = None
    limit: int | None = None
    signal: str = DEFAULT_SIGNAL
    threshold: float | None = None
    samples: int | None = None
    max_tokens: int = CalibrateParams.max_tokens  # calibrate's default
    seed: int = 0
    journal: bool = True
    kind: ClassVar[str] = "route"

    def __post_init__(self):
        if not self.small or not self.large:
            given = "--small" if self.small else "--large" if self.large else "neither"
            raise SettingsError(
                "lab route needs two models, a small one that answers first and a larger "
                f"one it escalates to: give both --small and --large (given: {given})"
            )
        if self.small.strip().lower().startswith(("http://", "https://")):
            raise SettingsError(
                "--small must be a local model: its confidence is read from its own "
                "weights; the large model may be on a server (--large http://HOST:PORT/v1#MODEL)"
            )
        if model_key(self.small) == model_key(self.large):
            raise SettingsError(
                f"--small and --large are the same model ({self.small}): the cascade needs "
                "a larger model to escalate to"
            )
        check_signal(self.signal)
        limit = self.limit
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise SettingsError(
                f"--limit takes a whole number of questions, 1 or more, not {limit!r}"
            )
        if self.threshold is not None:
            check_threshold(self.signal, self.threshold)
        if self.samples is None:
            object.__setattr__(self, "samples", 5 if self.signal in SAMPLED else 0)
        if self.signal in SAMPLED and self.samples == 0:
            raise SettingsError(
                f"--signal {self.signal} compares sampled answers: give --samples 1 or more"
            )
        self.calibrate_params(large=False)  # the shared fields, checked as calibrate does

    def calibrate_params(self, large: bool) -> CalibrateParams:
        """The CalibrateParams one model answers with (the large model never samples)."""
        return CalibrateParams(
            questions=self.questions,
            samples=0 if large else self.samples,
            limit=self.limit,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )


def escalates(value: float | None, threshold: float | None) -> bool:
    """Whether a question with signal `value` is escalated at `threshold` (None: every
    question; a signal that was not measured is not confidence: escalated)."""
    return threshold is None or value is None or value < threshold


def _pair(value: float, threshold: float) -> tuple[str, str]:
    """Both numbers with 2 decimals, more when 2 would print a false comparison."""
    for places in range(2, 10):
        a, b = f"{value:.{places}f}", f"{threshold:.{places}f}"
        if a != b or value == threshold:
            return a, b
    return repr(value), repr(threshold)


def decide(signal: str, value: float | None, threshold: float) -> tuple[bool, str]:
    """The cascade's decision on one question, and its reason in words.

    Args:
        signal: the signal's key.
        value: the small model's signal on the question (None: not measured).
        threshold: escalate below it.

    Returns:
        (escalated, e.g. "min token p 0.08 < 0.20: escalated").
    """
    name = label(signal)
    if value is None:
        return True, f"{name} not measured: escalated"
    v, t = _pair(value, threshold)
    if value < threshold:
        return True, f"{name} {v} < {t}: escalated"
    return False, f"{name} {v} ≥ {t}: kept"


def failed(reason: str, error: str) -> str:
    """The reason of an escalation whose large model failed: the small answer is kept."""
    return f"{reason.removesuffix(': escalated')}: the large model failed ({error}): kept"


# The signals one answer's own token records give (no samples, no second pass): what a
# live cascade (the playground, `serve --route`) can decide on as the answer ends.
RUN_SIGNALS = ("mean_prob", "geo_mean_prob", "min_prob", "first_prob", "first_entropy")


def run_signal(signal: str, records) -> float | None:
    """An answer's confidence `signal` (one of RUN_SIGNALS, higher = more confident) from
    its own token records, as calibrate measures it on a greedy answer: the raw (T=1)
    probability of each token the model chose, the end-of-sequence step left out (a
    client never sees it), reasoning and read or forced tokens left out. None when no
    answer token reports a probability (a server without logprobs).

    Raises:
        SettingsError: `signal` is not one of RUN_SIGNALS.
    """
    if signal not in RUN_SIGNALS:
        known = ", ".join(RUN_SIGNALS)
        raise SettingsError(
            f"a live cascade decides on {known} (what an answer's own token "
            f"probabilities give), not {signal!r}"
        )
    tokens = [
        r
        for r in records
        if getattr(r, "type", None) == "token" and not (r.eos or r.thinking or r.read or r.forced)
    ]
    if signal == "first_entropy":
        first = tokens[0].entropy if tokens else None
        return None if first is None else -first
    lps = [r.logprob for r in tokens if r.logprob is not None]
    if not lps:
        return None
    if signal == "first_prob":
        return math.exp(lps[0])
    if signal == "min_prob":
        return math.exp(min(lps))
    if signal == "geo_mean_prob":
        return math.exp(sum(lps) / len(lps))
    return sum(math.exp(lp) for lp in lps) / len(lps)


def check_cascade(small: str, large: str, signal: str, threshold) -> tuple[str, float]:
    """(signal, threshold) of a live cascade from `small` to `large` (model specs), when
    it can work.

    Raises:
        SettingsError: one sentence: no large model, the same model twice, a signal an
            answer's own tokens do not give, or a threshold out of the signal's range.
    """
    if not (large or "").strip():
        raise SettingsError(
            "choose the larger model to escalate to: the small one answers first and the "
            "large one when the small one is not confident enough"
        )
    if small and model_key(small) == model_key(large):
        raise SettingsError(
            f"the small and the large model are the same ({large}): routing needs a "
            "larger model to escalate to"
        )
    if signal not in RUN_SIGNALS:
        run_signal(signal, ())  # raises, naming the signals a live cascade can use
    return signal, check_threshold(signal, threshold, f"the threshold for {label(signal)}")


@dataclass(frozen=True)
class RoutedQuestion(PlainData):
    """One question answered by both models (the measurement), with the small model's
    signal; the large side is None where the large model failed on it."""

    line: int
    question: str
    signal: float | None  # the small model's, higher = more confident
    small_answer: str
    small_correct: bool
    small_seconds: float
    small_tokens: int  # prompt + answer tokens
    large_answer: str | None = None
    large_correct: bool | None = None
    large_seconds: float = 0.0
    large_tokens: int = 0
    large_error: str = ""  # why the large model has no answer ("" when it has one)
    small_run: str | None = None  # the journal's run ids (None: not journaled)
    large_run: str | None = None


@dataclass(frozen=True)
class RoutePoint(PlainData):
    """The cascade at one threshold: escalate when the signal is below it."""

    threshold: float | None  # None: above every value, every question escalated
    escalated: int
    share: float  # escalated / questions
    accuracy: float
    pgr: float | None  # (accuracy - small) / (large - small); None: large not better
    seconds: float  # the small model on every question + the large one on the escalated
    relative_cost: float  # seconds / the large model's seconds on every question
    tokens: int
    energy_j: float
    money: float
    random_accuracy: float  # the random router escalating the same share
    oracle_accuracy: float  # the oracle escalating as many questions


@dataclass(frozen=True)
class RouteResult(PlainData):
    """The cascade measured on a question set: every threshold's point, APGR, the
    cheapest threshold that keeps TARGET of the large model's accuracy."""

    small: str
    large: str
    questions_file: str
    signal: str
    signal_name: str
    asked: int
    answered: int  # questions the small model answered
    compared: int  # ... and the large one too: the curve's questions
    small_accuracy: float | None
    large_accuracy: float | None
    oracle_accuracy: float | None  # the best of both on every question
    oracle_share: float | None  # the share the oracle escalates to reach it
    small_seconds: float
    large_seconds: float  # the all-large baseline's time
    small_tokens: int
    large_tokens: int
    points: tuple[RoutePoint, ...]  # by share escalated, 0 to 1
    apgr: float | None
    random_apgr: float | None
    oracle_apgr: float | None
    why: str  # why APGR is undefined ("" when it is defined)
    target: float  # TARGET
    target_point: RoutePoint | None  # the cheapest point keeping target x large accuracy
    saving: float | None  # 1 - its seconds / the all-large seconds (negative: it costs more)
    saved_seconds: float | None
    saved_j: float | None
    saved_money: float | None
    best_point: RoutePoint | None  # the most accurate point (the cheapest of equals)
    watts: float
    energy_basis: str
    price_per_kwh: float
    currency: str
    rows: tuple[RoutedQuestion, ...]
    sentence: str
    large_error: str = ""  # the large model's failure, when it failed on questions
    max_tokens: int = 0
    samples: int = 0  # the small model's sampled answers (a sampled signal needs them)
    cost_basis: str = ""
    apgr_rule: str = APGR_RULE
    journal: str | None = None  # the History session of the runs (None: not journaled)
    journal_error: str = ""  # why the runs could not all be journaled
    seconds: float = 0.0
    cancelled: bool = False
    kind: ClassVar[str] = "route"
    nested: ClassVar[dict] = {
        "points": RoutePoint,
        "target_point": RoutePoint,
        "best_point": RoutePoint,
        "rows": RoutedQuestion,
    }


def thresholds(values: list[float | None]) -> list[float | None]:
    """The thresholds that change the decision: each distinct measured value (the
    smallest escalates nothing), then None (every question escalated)."""
    return [*sorted({v for v in values if v is not None}), None]


def oracle_accuracy(rows: list[RoutedQuestion], k: int) -> float:
    """The oracle's accuracy escalating exactly `k` of `rows` (all answered by both):
    the questions only the large model answers right first, then those both answer
    alike, last those only the small model answers right."""
    n = len(rows)
    gains = sum(1 for r in rows if r.large_correct and not r.small_correct)
    losses = sum(1 for r in rows if r.small_correct and not r.large_correct)
    alike = n - gains - losses
    right = sum(r.small_correct for r in rows) + min(k, gains) - max(0, k - gains - alike)
    return right / n


def trapezoid(xs: list[float], ys: list[float]) -> float:
    """The trapezoid area under the points (xs ascending)."""
    pairs = zip(xs, xs[1:], ys, ys[1:], strict=False)  # each point with the next
    return sum((x1 - x0) * (y0 + y1) / 2 for x0, x1, y0, y1 in pairs)


def curve(rows: list[RoutedQuestion], watts: float, price_per_kwh: float) -> list[RoutePoint]:
    """The cascade's point at every threshold of `rows` (all answered by both models),
    by share escalated."""
    return [_point(rows, t, watts, price_per_kwh) for t in thresholds([r.signal for r in rows])]


def point_at(result: RouteResult, threshold: float | None) -> RoutePoint | None:
    """The cascade of `result` at any `threshold` a person chooses (not only the curve's
    own): escalate each question whose signal is below it (None: every question). None
    when no question was answered by both models."""
    rows = [r for r in result.rows if r.large_correct is not None]
    if not rows:
        return None
    return _point(rows, threshold, result.watts, result.price_per_kwh)


def _point(rows: list[RoutedQuestion], t: float | None, watts: float, price: float) -> RoutePoint:
    """The cascade's point at threshold `t` over `rows` (all answered by both models)."""
    n = len(rows)
    small_acc = sum(r.small_correct for r in rows) / n
    large_acc = sum(bool(r.large_correct) for r in rows) / n
    gap = large_acc - small_acc
    base_s = sum(r.small_seconds for r in rows)
    base_t = sum(r.small_tokens for r in rows)
    all_large = sum(r.large_seconds for r in rows)
    up = [r for r in rows if escalates(r.signal, t)]
    k = len(up)
    right = sum(r.small_correct for r in rows) + sum(
        bool(r.large_correct) - r.small_correct for r in up
    )
    accuracy = right / n
    seconds = base_s + sum(r.large_seconds for r in up)
    energy = seconds * watts
    return RoutePoint(
        threshold=t,
        escalated=k,
        share=k / n,
        accuracy=accuracy,
        pgr=(accuracy - small_acc) / gap if gap > 0 else None,
        seconds=seconds,
        relative_cost=seconds / all_large if all_large > 0 else 0.0,
        tokens=base_t + sum(r.large_tokens for r in up),
        energy_j=energy,
        money=electricity_cost(energy, price),
        random_accuracy=small_acc + k / n * gap,
        oracle_accuracy=oracle_accuracy(rows, k),
    )


def apgr(points: list[RoutePoint]) -> float | None:
    """APGR: the trapezoid under (share, PGR) of `points` (by share, 0 to 1); None
    when PGR is undefined (see the module)."""
    if not points or any(p.pgr is None for p in points):
        return None
    return trapezoid([p.share for p in points], [p.pgr for p in points])


def oracle_apgr(rows: list[RoutedQuestion]) -> float | None:
    """The oracle's APGR: the trapezoid under its PGR at k = 0..n escalated."""
    n = len(rows)
    small = sum(r.small_correct for r in rows) / n
    gap = sum(bool(r.large_correct) for r in rows) / n - small
    if gap <= 0:
        return None
    shares = [k / n for k in range(n + 1)]
    return trapezoid(shares, [(oracle_accuracy(rows, k) - small) / gap for k in range(n + 1)])


def target_point(points: list[RoutePoint], large_accuracy: float) -> RoutePoint | None:
    """The cheapest point whose accuracy keeps TARGET of `large_accuracy`."""
    keeping = [p for p in points if p.accuracy >= TARGET * large_accuracy - 1e-12]
    return min(keeping, key=lambda p: (p.seconds, p.share)) if keeping else None


def summarise(rows: list[RoutedQuestion], **fields) -> RouteResult:
    """The measurement's result from its rows; `fields`: small, large, questions_file,
    signal, asked, watts, energy_basis, price_per_kwh, currency and the optional fields
    of RouteResult (the rest is computed here from the rows)."""
    compared = [r for r in rows if r.large_correct is not None]
    signal = fields["signal"]
    base = {
        "answered": len(rows),
        "compared": len(compared),
        "signal_name": SIGNALS[signal][0],
        "rows": tuple(rows),
        "target": TARGET,
    }
    if not compared:
        empty = dict.fromkeys(
            ("small_accuracy", "large_accuracy", "oracle_accuracy", "oracle_share")
            + ("apgr", "random_apgr", "oracle_apgr", "target_point", "saving")
            + ("saved_seconds", "saved_j", "saved_money", "best_point")
        )
        result = RouteResult(
            **base,
            **empty,
            small_seconds=sum(r.small_seconds for r in rows),
            large_seconds=0.0,
            small_tokens=sum(r.small_tokens for r in rows),
            large_tokens=0,
            points=(),
            why="no question was answered by both models",
            sentence="",
            **fields,
        )
        return _with_sentence(result)
    n = len(compared)
    small_acc = sum(r.small_correct for r in compared) / n
    large_acc = sum(bool(r.large_correct) for r in compared) / n
    points = curve(compared, fields["watts"], fields["price_per_kwh"])
    gains = sum(1 for r in compared if r.large_correct and not r.small_correct)
    all_large = sum(r.large_seconds for r in compared)
    target = target_point(points, large_acc)
    saved = all_large - target.seconds if target else None
    why = ""
    if large_acc <= small_acc:
        why = (
            "the two models answer equally many right: there is no gap to recover"
            if large_acc == small_acc
            else "the small model answers more right than the large one: there is no gap to recover"
        )
    watts, price = fields["watts"], fields["price_per_kwh"]
    result = RouteResult(
        **base,
        small_accuracy=small_acc,
        large_accuracy=large_acc,
        oracle_accuracy=oracle_accuracy(compared, gains),
        oracle_share=gains / n,
        small_seconds=sum(r.small_seconds for r in compared),
        large_seconds=all_large,
        small_tokens=sum(r.small_tokens for r in compared),
        large_tokens=sum(r.large_tokens for r in compared),
        points=tuple(points),
        apgr=None if why else apgr(points),
        random_apgr=None if why else 0.5,
        oracle_apgr=None if why else oracle_apgr(compared),
        why=why,
        target_point=target,
        saving=saved / all_large if saved is not None and all_large > 0 else None,
        saved_seconds=saved,
        saved_j=saved * watts if saved is not None else None,
        saved_money=electricity_cost(saved * watts, price) if saved is not None else None,
        best_point=min(points, key=lambda p: (-p.accuracy, p.seconds)),
        sentence="",
        **fields,
    )
    return _with_sentence(result)


def _with_sentence(r: RouteResult) -> RouteResult:
    from dataclasses import replace

    words = sentence(r)
    if r.cancelled:
        both = f"the {r.compared} questions both models answered"
        words = f"Cancelled: the figures are those of {both}. {words}"
    return replace(r, sentence=words)


def _threshold_words(r: RouteResult, p: RoutePoint) -> str:
    if p.threshold is None:
        return "escalating every question"
    if p.escalated == 0:
        return "escalating none"
    return f"escalating below {label(r.signal)} {p.threshold:.3g} ({pct(p.share)} of the questions)"


def _cost_words(r: RouteResult, p: RoutePoint) -> str:
    if r.large_seconds <= 0:
        return ""
    saving = 1 - p.relative_cost
    if saving >= 0:
        return f"saves {pct(saving)} of the all-large time"
    return (
        f"costs {pct(-saving)} more time than the large model alone (the small model "
        "answers every question first)"
    )


def sentence(r: RouteResult) -> str:
    """What the measurement says, computed from it."""
    if not r.answered:
        return "No question was answered."
    if not r.compared:
        return (
            f"The large model failed ({r.large_error or r.why}): every answer is the small "
            f"model's, none escalated; {r.small} answered "
            f"{pct(sum(q.small_correct for q in r.rows) / r.answered)} right."
        )
    head = (
        f"{r.small} answered {pct(r.small_accuracy)} of {r.compared} questions right, "
        f"{r.large} {pct(r.large_accuracy)}"
    )
    speed = r.small_seconds / r.large_seconds if r.large_seconds > 0 else None
    if speed is not None:
        head += f", in {pct(speed)} of the large model's time"
    head += "."
    best = r.best_point
    if r.large_accuracy <= r.small_accuracy:
        fewer = r.large_accuracy < r.small_accuracy
        if best is not None and best.accuracy > r.small_accuracy:
            return (
                f"{head} The small model is the better one here, so escalating helps only "
                f"where {label(r.signal)} finds the questions the large model gets right and "
                f"the small one does not: {_threshold_words(r, best)} gives "
                f"{pct(best.accuracy)} against {pct(r.small_accuracy)} and "
                f"{_cost_words(r, best)}." + (f" {r.large_error}" if r.large_error else "")
            )
        text = (
            f"{head} The small model is the better one here, so the cascade cannot help: "
            f"escalating hands questions to a model that answers {'fewer' if fewer else 'no more'}"
            f" right, and costs the large model's time on top of the small one's; the small "
            f"model alone is {'the most' if fewer else 'as'} accurate"
        )
        cheaper = r.small_seconds <= r.large_seconds
        text += " and the cheapest." if cheaper else ", though not faster here."
        return text + (f" {r.large_error}" if r.large_error else "")
    text = (
        f"{head} Escalating by {label(r.signal)} recovers on average {pct(r.apgr)} of the "
        f"gap (APGR {r.apgr:.2f}; a random router 0.50, the oracle {r.oracle_apgr:.2f})."
    )
    p = r.target_point
    if p is not None:
        text += (
            f" To keep {pct(r.target)} of the large model's accuracy, "
            f"{_threshold_words(r, p)} gives {pct(p.accuracy)}"
        )
        cost = _cost_words(r, p)
        text += f" and {cost}." if cost else "."
    if r.large_error:
        text += f" {r.large_error}"
    return text


@dataclass(frozen=True)
class CascadeQuestion(PlainData):
    """One request through the cascade: the small answer, the decision and its reason,
    the large answer when escalated, and the answer given."""

    line: int
    question: str
    signal: float | None
    escalated: bool  # False too when the large model failed (see `error`)
    reason: str
    answer: str  # the answer given: the large model's when escalated
    correct: bool
    small_answer: str
    small_correct: bool
    small_seconds: float
    large_answer: str | None = None
    large_correct: bool | None = None
    large_seconds: float = 0.0
    error: str = ""  # the large model's failure on this question
    small_run: str | None = None
    large_run: str | None = None  # its journal entry names small_run


@dataclass(frozen=True)
class CascadeResult(PlainData):
    """The cascade at one threshold on a question set: what each request got."""

    small: str
    large: str
    questions_file: str
    signal: str
    threshold: float
    asked: int
    answered: int
    escalated: int
    failed: int  # escalations the large model failed: the small answers kept
    accuracy: float | None  # of the answers given
    small_accuracy: float | None  # had every small answer been kept
    seconds: float  # small + large answering
    small_seconds: float
    large_seconds: float
    rows: tuple[CascadeQuestion, ...]
    sentence: str
    journal: str | None = None
    journal_error: str = ""
    cancelled: bool = False
    kind: ClassVar[str] = "cascade"
    nested: ClassVar[dict] = {"rows": CascadeQuestion}


def cascade_result(rows: list[CascadeQuestion], **fields) -> CascadeResult:
    """The cascade's result from its rows; `fields`: small, large, questions_file,
    signal, threshold, asked and the optional fields."""
    n = len(rows)
    up = sum(r.escalated for r in rows)
    failures = sum(1 for r in rows if r.error)
    acc = sum(r.correct for r in rows) / n if n else None
    small_acc = sum(r.small_correct for r in rows) / n if n else None
    small_s = sum(r.small_seconds for r in rows)
    large_s = sum(r.large_seconds for r in rows)
    if not n:
        words = "No question was answered."
    else:
        words = (
            f"At {label(fields['signal'])} < {fields['threshold']:g}, {up} of {n} questions "
            f"went to {fields['large']}; the answers given were {pct(acc)} right against "
            f"{pct(small_acc)} for {fields['small']} alone, in {small_s + large_s:.1f} s "
            f"({large_s:.1f} s of it the large model's)."
        )
        if failures:
            words += f" The large model failed on {failures}: the small model's answers were kept."
    return CascadeResult(
        answered=n,
        escalated=up,
        failed=failures,
        accuracy=acc,
        small_accuracy=small_acc,
        seconds=small_s + large_s,
        small_seconds=small_s,
        large_seconds=large_s,
        rows=tuple(rows),
        sentence=words,
        **fields,
    )
