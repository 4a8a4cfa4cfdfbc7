"""The "confidently wrong" lesson: it reads each statement pair of
app/tour/false_statements.py through the loaded model (Read a text: one teacher-forced
pass per statement), scores each read by its perplexity (exp of the mean negative
log-probability per token, the figure the playground's status line shows for a read),
and finds the pair whose false statement fared best against its true one. That pair
is read again last (unless it was the last read), so the two latest reads, the false
one on screen and the true one just before it, are the ones the sentence names; every
number in it is theirs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.tour import steps
from app.tour.false_statements import PAIRS, TINY_PAIRS, StatementPair
from app.tour.host import Sentence
from app.tour.steps import pct, quote
from engine.lab.params import CalibrateParams

NEAR = 1.10  # a false statement within 10 % of its true one's perplexity nearly matched it


@dataclass(frozen=True)
class PairScore:
    """One pair as read: each statement's perplexity (lower: more usual to the model)."""

    pair: StatementPair
    true_perplexity: float
    false_perplexity: float

    @property
    def ratio(self) -> float:
        """The false statement's perplexity over the true one's (below 1: it scored better)."""
        return self.false_perplexity / self.true_perplexity


CONFIDENCE_QUESTIONS, TINY_CONFIDENCE_QUESTIONS, CONFIDENCE_SAMPLES = 5, 3, 2
CONFIDENCE_SIGNAL = "mean_prob"  # the answer's arithmetic mean token probability


def confidence_params(host) -> CalibrateParams:
    """The lesson's calibrate: the first few bundled questions, two samples each."""
    n = steps.size(host, CONFIDENCE_QUESTIONS, TINY_CONFIDENCE_QUESTIONS)
    return CalibrateParams(samples=CONFIDENCE_SAMPLES, limit=n)


def perplexity(state) -> float | None:
    """A read's perplexity: its summary's (what the status line shows), else computed from
    its tokens' log-probabilities; None when no token was scored."""
    summary = getattr(state.done, "reading", None) if state.done is not None else None
    if summary is not None and summary.perplexity is not None:
        return summary.perplexity
    logprobs = [t.logprob for t in state.tokens if t.logprob is not None]
    return math.exp(-math.fsum(logprobs) / len(logprobs)) if logprobs else None


def best(scores: list[PairScore]) -> PairScore:
    """The pair whose false statement fared best against its true one."""
    return min(scores, key=lambda s: s.ratio)


def read_pairs(host, ctx: dict):
    """Read every pair (true, then false), then the best pair again unless it was last.

    Leaves ctx["scores"] (a PairScore per pair), ctx["reads"] (each pair's two reads),
    ctx["shown"] (the best pair's index), ctx["true"] and ctx["run"] (its two reads, the
    false one on screen) and points the playground at the first token where they differ."""
    pairs = PAIRS[: steps.size(host, len(PAIRS), TINY_PAIRS)]
    scores, reads = [], []
    for pair in pairs:
        read = yield from _read_pair(host, ctx, pair)
        if read is None:
            return
        scores.append(read[0])
        reads.append(read[1:])
    i = scores.index(best(scores))
    if i != len(scores) - 1:  # read it again: the two latest reads are the pair named
        read = yield from _read_pair(host, ctx, scores[i].pair)
        if read is None:
            return
        scores[i], reads[i] = read[0], read[1:]
    ctx["scores"], ctx["reads"], ctx["shown"] = scores, reads, i
    ctx["true"], ctx["run"] = reads[i]
    host.select(_first_difference(ctx["true"].tokens, ctx["run"].tokens))
    if host.local():  # the Lab reads the weights: a server's model is not asked
        confidence: dict = {}
        ctx["confidence"] = confidence
        yield from steps.lab(host, confidence, confidence_params(host), "")


def _read_pair(host, ctx: dict, pair: StatementPair):
    """Read `pair`'s two statements; (its PairScore, the true read, the false read), or
    None with ctx saying why."""
    states = []
    for text in (pair.true, pair.false):
        ctx.pop("run", None)
        yield from steps.run(host, ctx, text, mode="read")
        state = ctx.get("run")
        if state is not None and state.error is not None and not host.local():
            ctx["needs_local"] = True  # most servers do not score a given text
        if steps.missing(ctx):
            return None
        if perplexity(state) is None:
            ctx["failed"] = f"The read of {quote(text)} scored no token, so it has no perplexity."
            return None
        states.append(state)
    return PairScore(pair, perplexity(states[0]), perplexity(states[1])), *states


def _first_difference(right, wrong) -> int | None:
    """The first position where the two texts' tokens differ (None: nowhere)."""
    pairs = enumerate(zip(right, wrong, strict=False))
    return next((i for i, (a, b) in pairs if a.token_id != b.token_id), None)


def say_read(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if ctx.get("needs_local"):
        return Sentence(
            f"{why} Reading a text needs the probability of each of its tokens, which this "
            "server does not return: switch to a local model (the button below) to read it."
        )
    if why is None and "shown" not in ctx:
        why = "No statement pair was read."
    if why:
        return Sentence(why)
    scores = ctx["scores"]
    top, n = scores[ctx["shown"]], len(scores)  # the pair whose two reads are shown
    lower = sum(s.ratio < 1 for s in scores)
    pt, pf = top.true_perplexity, top.false_perplexity
    pair = (
        f"{quote(top.pair.false)} (on screen) had perplexity {pf:,.2f} against {pt:,.2f} for "
        f"{quote(top.pair.true)} (read just before it)"
    )
    measure = "perplexity over the whole sentence, the status line's figure: lower is more usual"
    if pf < pt:
        said = (
            f"Of {n} false statements read beside their true counterparts, {lower} scored "
            f"better ({measure} to the model). The clearest: {pair}."
        )
        point = " It scores what text usually looks like, not what is true."
    elif pf <= NEAR * pt:
        said = (
            f"On this model all {n} false statements scored worse than their true "
            f"counterparts ({measure}), but only just: {pair}, {pct(pf / pt - 1)} higher."
        )
        point = " It barely tells them apart: how usual the wording is decides its score."
    else:
        said = (
            f"On this model all {n} false statements scored worse than their true "
            f"counterparts ({measure}). Even the closest was ×{pf / pt:.2f} the true one's: "
            f"{pair}."
        )
        point = (
            " The lesson's point does not show with these pairs here: most likely its "
            "training text states these facts correctly far more often than wrongly, and how "
            "usual a text is remains all it scores."
        )
    numbers = {"pairs": n, "lower": lower, "true_perplexity": pt, "false_perplexity": pf}
    said += _where_they_part(ctx, numbers) + point
    return Sentence(said + _confidently_wrong(ctx.get("confidence"), numbers), numbers)


def most_confident_wrong(result):
    """The wrong row with the highest arithmetic mean token probability (None: none wrong)."""
    wrong = [row for row in result.rows if not row.correct]
    return max(wrong, key=lambda row: row.signal(CONFIDENCE_SIGNAL), default=None)


def _confidently_wrong(confidence: dict | None, numbers: dict) -> str:
    """The Confidence tab's part: the most confident wrong answer of its run (adds its
    figures to `numbers`); "" where it did not run (a server's model)."""
    if confidence is None:
        return ""
    r = confidence.get("result")
    if "failed" in confidence or r is None:
        return " The Lab's Confidence tab did not finish its questions: it says why."
    right = sum(row.correct for row in r.rows)
    numbers.update({"questions": r.answered, "right": right})
    asked = (
        f" The Lab's Confidence tab then asked it {r.answered} bundled question"
        f"{'' if r.answered == 1 else 's'}: {right} right."
    )
    row = most_confident_wrong(r)
    if row is None:
        return asked + " None of its answers was wrong, so none was confidently wrong here."
    p = row.signal(CONFIDENCE_SIGNAL)
    beaten = sum(x.correct and x.signal(CONFIDENCE_SIGNAL) < p for x in r.rows)
    numbers.update({"wrong_line": row.line, "wrong_mean_prob": p, "right_below": beaten})
    lines = [ln for ln in row.answer.strip().splitlines() if ln.strip()]
    answer = lines[0].strip() if lines else ""  # the line judged (engine/lab/questions.py)
    said = (
        f" Its most confident wrong answer: {quote(answer)} to {quote(row.question)}, with "
        f"a mean token probability of {pct(p)}"
    )
    if beaten:
        said += f", above {beaten} of its {right} right answer{'' if right == 1 else 's'}"
    elif right:
        said += ", below each of its right answers"
    return asked + said + "."


def _where_they_part(ctx: dict, numbers: dict) -> str:
    """The two tokens at the first position where the best pair's reads differ (one
    distribution: the tokens before it are the same); adds them to `numbers`."""
    right, wrong = ctx["true"].tokens, ctx["run"].tokens
    k = _first_difference(right, wrong)
    if k is None:
        return ""
    a, b = right[k], wrong[k]
    numbers.update({"step": k, "true": a.prob, "false": b.prob})
    said = (
        f" Where they part (the token the playground points at) it gave the false "
        f"{quote(b.text)} {pct(b.prob)}{_rank(b)} and the true {quote(a.text)} "
        f"{pct(a.prob)}{_rank(a)}"
    )
    if a.prob is None or b.prob is None:
        return said + "."
    better = numbers["false_perplexity"] < numbers["true_perplexity"]
    if better and b.prob < a.prob:
        return said + ": the false word was the less likely, the rest of its sentence won it."
    if better:
        return said + ": the false word itself was the likelier."
    if b.prob > a.prob:
        return said + ": the false word was the likelier, the rest of its sentence lost it."
    return said + "."


def _rank(record) -> str:
    return f" (rank {record.rank})" if record.rank is not None else ""
