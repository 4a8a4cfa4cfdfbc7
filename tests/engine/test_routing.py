"""Routing (engine/lab/routing.py): the cascade's curve, APGR, the random router and the
oracle against NumPy (and a brute force over every subset) written here, on constructed
rows; the reasons in words; a failing large model never loses a request; the command's
bad settings."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

from engine.errors import SettingsError
from engine.lab import routing
from engine.lab.confidence import QuestionRow
from engine.lab.confidence_stats import pct
from engine.lab.questions import Question
from engine.lab.reporter import LabReporter

WATTS, PRICE = 20.0, 0.25


def _rows(seed: int, n: int = 9, ties: bool = True) -> list[routing.RoutedQuestion]:
    rng = np.random.default_rng(seed)
    values = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], n) if ties else rng.random(n)
    return [
        routing.RoutedQuestion(
            line=i + 1,
            question=f"q{i}",
            signal=float(values[i]),
            small_answer="s",
            small_correct=bool(rng.random() < 0.4),
            small_seconds=float(rng.uniform(0.1, 0.5)),
            small_tokens=int(rng.integers(10, 30)),
            large_answer="l",
            large_correct=bool(rng.random() < 0.7),
            large_seconds=float(rng.uniform(0.5, 2.0)),
            large_tokens=int(rng.integers(10, 40)),
        )
        for i in range(n)
    ]


def _arrays(rows):
    s = np.array([r.signal for r in rows])
    sc = np.array([r.small_correct for r in rows], float)
    lc = np.array([bool(r.large_correct) for r in rows], float)
    ss = np.array([r.small_seconds for r in rows])
    ls = np.array([r.large_seconds for r in rows])
    st = np.array([r.small_tokens for r in rows])
    lt = np.array([r.large_tokens for r in rows])
    return s, sc, lc, ss, ls, st, lt


def _result(rows, signal="min_prob"):
    return routing.summarise(
        rows,
        small="small",
        large="large",
        questions_file="q.jsonl",
        signal=signal,
        asked=len(rows),
        watts=WATTS,
        energy_basis="test",
        price_per_kwh=PRICE,
        currency="USD",
    )


@pytest.mark.parametrize(("seed", "ties"), [(0, True), (1, True), (2, False), (3, True)])
def test_curve_points_equal_numpy(seed, ties):
    rows = _rows(seed, ties=ties)
    r = _result(rows)
    s, sc, lc, ss, ls, st, lt = _arrays(rows)
    cuts = [*np.unique(s), np.inf]  # escalate when s < cut; the last escalates all
    assert len(r.points) == len(cuts)
    for p, cut in zip(r.points, cuts, strict=True):
        up = s < cut
        assert p.threshold == (None if np.isinf(cut) else cut)
        assert p.escalated == up.sum() and p.share == pytest.approx(up.mean(), abs=1e-12)
        assert p.accuracy == pytest.approx(np.where(up, lc, sc).mean(), abs=1e-12)
        seconds = ss.sum() + ls[up].sum()
        assert p.seconds == pytest.approx(seconds, rel=1e-12)
        assert p.relative_cost == pytest.approx(seconds / ls.sum(), rel=1e-12)
        assert p.tokens == st.sum() + lt[up].sum()
        assert p.energy_j == pytest.approx(seconds * WATTS, rel=1e-12)
        assert p.money == pytest.approx(seconds * WATTS / 3.6e6 * PRICE, rel=1e-12)
    assert r.points[0].escalated == 0 and r.points[-1].escalated == len(rows)
    assert r.small_accuracy == pytest.approx(sc.mean()) and r.large_accuracy == pytest.approx(
        lc.mean()
    )


def _np_pgr(acc, small, large):
    return (np.asarray(acc) - small) / (large - small)


@pytest.mark.parametrize("seed", [0, 1, 3, 4])
def test_apgr_random_line_and_oracle_equal_numpy(seed):
    rows = _rows(seed)
    s, sc, lc, *_ = _arrays(rows)
    small, large = sc.mean(), lc.mean()
    assert large > small  # the constructed rows: the large model is the better one
    r = _result(rows)
    cuts = [*np.unique(s), np.inf]
    share = np.array([(s < c).mean() for c in cuts])
    acc = np.array([np.where(s < c, lc, sc).mean() for c in cuts])
    assert r.apgr == pytest.approx(np.trapezoid(_np_pgr(acc, small, large), share), abs=1e-12)
    for p, sh in zip(r.points, share, strict=True):
        assert p.pgr == pytest.approx(_np_pgr(p.accuracy, small, large), abs=1e-12)
        assert p.random_accuracy == pytest.approx(small + sh * (large - small), abs=1e-12)
    line = small + np.linspace(0, 1, 101) * (large - small)
    assert r.random_apgr == pytest.approx(
        np.trapezoid(_np_pgr(line, small, large), np.linspace(0, 1, 101)), abs=1e-12
    )
    # the oracle: the best of every subset of k questions escalated (brute force)
    n = len(rows)
    best = [
        max(
            np.where(np.isin(np.arange(n), list(c)), lc, sc).mean()
            for c in itertools.combinations(range(n), k)
        )
        for k in range(n + 1)
    ]
    for p in r.points:
        assert p.oracle_accuracy == pytest.approx(best[p.escalated], abs=1e-12)
    assert r.oracle_accuracy == pytest.approx(np.maximum(sc, lc).mean(), abs=1e-12)
    assert r.oracle_share == pytest.approx(((lc == 1) & (sc == 0)).mean(), abs=1e-12)
    shares = np.arange(n + 1) / n
    assert r.oracle_apgr == pytest.approx(
        np.trapezoid(_np_pgr(best, small, large), shares), abs=1e-12
    )
    assert r.oracle_apgr >= r.apgr - 1e-12


def test_apgr_on_a_hand_made_set():
    """4 questions: the large model alone right on the two least confident ones, so the
    signal is perfect: PGR 0, 0.5, 1, 1, 1 at shares 0, 1/4, 1/2, 3/4, 1."""

    def q(value, small, large):
        return routing.RoutedQuestion(1, "q", value, "s", small, 1.0, 10, "l", large, 2.0, 10)

    rows = [q(0.1, False, True), q(0.2, False, True), q(0.8, True, True), q(0.9, True, True)]
    r = _result(rows)
    assert [p.pgr for p in r.points] == [0.0, 0.5, 1.0, 1.0, 1.0]
    assert r.apgr == pytest.approx(0.25 * (0.25 + 0.75 + 1 + 1))  # 0.75
    # 95 % of 100 % needs both escalated: 4 + 2 x 2 = 8 s against 8 s all-large
    assert r.target_point.escalated == 2 and r.target_point.threshold == 0.8
    assert r.saving == pytest.approx(0.0) and r.saved_seconds == pytest.approx(0.0)
    assert "APGR 0.75" in r.sentence and "a random router 0.50" in r.sentence


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_the_95_percent_point_is_the_cheapest_that_keeps_it(seed):
    rows = _rows(seed)
    r = _result(rows)
    s, sc, lc, ss, ls, *_ = _arrays(rows)
    cuts = [*np.unique(s), np.inf]
    acc = np.array([np.where(s < c, lc, sc).mean() for c in cuts])
    cost = np.array([ss.sum() + ls[s < c].sum() for c in cuts])
    ok = acc >= 0.95 * lc.mean() - 1e-12
    i = int(np.flatnonzero(ok)[np.argmin(cost[ok])])
    assert r.target_point == r.points[i]
    assert r.saving == pytest.approx(1 - cost[i] / ls.sum(), abs=1e-12)
    assert r.saved_j == pytest.approx((ls.sum() - cost[i]) * WATTS, rel=1e-9)


def test_a_better_small_model_is_said_honestly():
    rows = [
        dataclasses.replace(r, small_correct=r.large_correct, large_correct=r.small_correct)
        for r in _rows(0)
    ]
    r = _result(rows)
    assert r.small_accuracy > r.large_accuracy
    assert r.apgr is None and r.oracle_apgr is None and r.random_apgr is None
    assert "no gap to recover" in r.why
    assert all(p.pgr is None for p in r.points)
    assert "the cascade cannot help" in r.sentence
    assert r.target_point.escalated == 0  # the small model alone keeps 95 %
    json.dumps(r.to_dict(), allow_nan=False)
    assert routing.RouteResult.from_dict(r.to_dict()) == r


def _q(value, small, large, small_s=1.0, large_s=2.0):
    return routing.RoutedQuestion(1, "q", value, "s", small, small_s, 10, "l", large, large_s, 10)


def test_the_sentences_are_computed_from_the_result():
    # the small model better, and the large one right only where the small one is least
    # confident: escalating below 0.5 (1 of 4) gives 4 of 4 for 4 x 1 + 2 s of 8 s
    rows = [_q(0.1, False, True), _q(0.5, True, False), _q(0.6, True, False), _q(0.9, True, True)]
    r = _result(rows)
    assert r.sentence == (
        "small answered 75 % of 4 questions right, large 50 %, in 50 % of the large model's "
        "time. The small model is the better one here, so escalating helps only where min "
        "token p finds the questions the large model gets right and the small one does not: "
        "escalating below min token p 0.5 (25 % of the questions) gives 100 % against 75 % "
        "and saves 25 % of the all-large time."
    )
    # the small model better everywhere, and slower: said so
    rows = [_q(0.1, True, False, 3.0), _q(0.5, True, True, 3.0), _q(0.9, False, False, 3.0)]
    r = _result(rows)
    assert r.sentence == (
        "small answered 67 % of 3 questions right, large 33 %, in 150 % of the large model's "
        "time. The small model is the better one here, so the cascade cannot help: escalating "
        "hands questions to a model that answers fewer right, and costs the large model's "
        "time on top of the small one's; the small model alone is the most accurate, though "
        "not faster here."
    )
    # the large model better; keeping 95 % of it costs more than asking it alone
    rows = [_q(0.1, False, True), _q(0.2, False, True), _q(0.3, True, True)]
    r = _result(rows)
    assert r.apgr == pytest.approx(np.trapezoid([0, 0.5, 1, 1], [0, 1 / 3, 2 / 3, 1]))
    assert r.sentence == (
        "small answered 33 % of 3 questions right, large 100 %, in 50 % of the large model's "
        f"time. Escalating by min token p recovers on average {pct(r.apgr)} of the gap "
        f"(APGR {r.apgr:.2f}; a random router 0.50, the oracle {r.oracle_apgr:.2f}). To keep "
        "95 % of the large model's accuracy, escalating below min token p 0.3 (67 % of the "
        "questions) gives 100 % and costs 17 % more time than the large model alone (the small "
        "model answers every question first)."
    )
    cancelled = routing.summarise(rows, **{**_fields(), "cancelled": True})
    assert cancelled.sentence.startswith(
        "Cancelled: the figures are those of the 3 questions both models answered. small "
    )


def _fields():
    return {
        "small": "small",
        "large": "large",
        "questions_file": "q.jsonl",
        "signal": "min_prob",
        "asked": 3,
        "watts": WATTS,
        "energy_basis": "test",
        "price_per_kwh": PRICE,
        "currency": "USD",
    }


def test_equal_models_and_a_large_model_that_failed_everywhere():
    rows = [dataclasses.replace(r, large_correct=r.small_correct) for r in _rows(2)]
    r = _result(rows)
    assert r.apgr is None and "equally many right" in r.why
    gone = [
        dataclasses.replace(r, large_answer=None, large_correct=None, large_error="boom")
        for r in rows
    ]
    r = routing.summarise(
        gone,
        small="small",
        large="large",
        questions_file="q",
        signal="min_prob",
        asked=len(gone),
        watts=1.0,
        energy_basis="",
        price_per_kwh=0.1,
        currency="USD",
        large_error="the large model failed to load: boom",
    )
    assert r.compared == 0 and r.points == () and r.answered == len(gone)
    assert r.sentence.startswith("The large model failed (the large model failed to load: boom)")
    assert "none escalated" in r.sentence


def test_reasons_in_words():
    assert routing.decide("min_prob", 0.08, 0.2) == (True, "min token p 0.08 < 0.20: escalated")
    assert routing.decide("min_prob", 0.41, 0.2) == (False, "min token p 0.41 ≥ 0.20: kept")
    assert routing.decide("min_prob", 0.2, 0.2) == (False, "min token p 0.20 ≥ 0.20: kept")
    # two decimals would print "0.20 < 0.20": more digits, until the numbers differ
    assert routing.decide("min_prob", 0.199, 0.2) == (True, "min token p 0.199 < 0.200: escalated")
    assert routing.decide("first_entropy", -2.5, -1.0)[1] == (
        "negated first-step entropy -2.50 < -1.00: escalated"
    )
    assert routing.decide("agreement", None, 0.5) == (
        True,
        "sample agreement not measured: escalated",
    )
    assert routing.failed("min token p 0.08 < 0.20: escalated", "out of memory") == (
        "min token p 0.08 < 0.20: the large model failed (out of memory): kept"
    )


def _row(q: Question, answer: str, correct: bool, logprobs: tuple[float, ...]) -> QuestionRow:
    return QuestionRow(
        line=q.line,
        question=q.question,
        accepted=q.answers,
        answer=answer,
        correct=correct,
        answer_ids=tuple(range(len(logprobs))),
        prompt_tokens=20,
        token_logprobs=logprobs,
        mean_logprob=sum(logprobs) / len(logprobs),
        min_logprob=min(logprobs),
        first_prob=float(np.exp(logprobs[0])),
        first_entropy=1.0,
        samples=(),
        agreement=None,
        cluster_entropy=None,
        clusters=0,
        seconds=0.5,
    )


class _Small:
    name = "small"

    def __init__(self, logprobs):
        self.logprobs, self.journaled = logprobs, []

    def answer(self, q):
        return _row(q, "small says", q.line % 2 == 0, self.logprobs[q.line])

    def journal(self, journal, row, name, notify):
        self.journaled.append(name)
        return f"S/{len(self.journaled)}"


class _Large(_Small):
    name = "large"

    def __init__(self, fail_on=()):
        super().__init__({})
        self.fail_on = fail_on

    def answer(self, q):
        if q.line in self.fail_on:
            raise MemoryError("out of memory")
        return _row(q, "large says", True, (-0.1,))

    def journal(self, journal, row, name, notify):
        self.journaled.append(name)
        return f"L/{len(self.journaled)}"


def _questions(n):
    return [Question(line=i, question=f"question {i}", answers=("x",)) for i in range(1, n + 1)]


def test_the_cascade_escalates_below_the_threshold_and_keeps_a_failed_escalation():
    from engine.backends.mlx.route_runs import cascade_rows

    # min token p: line 1 0.05, line 2 0.5, line 3 0.1, line 4 0.9
    probs = {1: 0.05, 2: 0.5, 3: 0.1, 4: 0.9}
    small = _Small({k: (np.log(v), -0.01) for k, v in probs.items()})
    large = _Large(fail_on=(3,))
    params = routing.RouteParams("a", "b", signal="min_prob", threshold=0.2, journal=False)
    rows = cascade_rows(_questions(4), small, large, params, None, LabReporter(), [])
    assert [r.escalated for r in rows] == [True, False, False, False]
    assert rows[0].answer == "large says" and rows[0].correct and rows[0].large_run == "L/1"
    assert rows[0].reason == "min token p 0.05 < 0.20: escalated"
    assert large.journaled == ["escalated from S/1: min token p 0.05 < 0.20"]
    # line 3 was below the threshold, but the large model failed: the small answer stays
    assert rows[2].answer == "small says" and rows[2].error == "out of memory"
    assert rows[2].reason == "min token p 0.10 < 0.20: the large model failed (out of memory): kept"
    assert rows[1].reason == "min token p 0.50 ≥ 0.20: kept" and rows[1].large_answer is None
    assert small.journaled == [r.reason for r in rows]
    result = routing.cascade_result(
        rows,
        small="small",
        large="large",
        questions_file="q",
        signal="min_prob",
        threshold=0.2,
        asked=4,
    )
    assert (result.escalated, result.failed, result.answered) == (1, 1, 4)
    assert result.accuracy == pytest.approx(np.mean([True, True, False, True]))
    assert "The large model failed on 1" in result.sentence
    # a large model that never loaded: every request still answered, none escalated
    rows = cascade_rows(
        _questions(4), small, None, params, None, LabReporter(), [], "no such model"
    )
    assert len(rows) == 4 and not any(r.escalated for r in rows)
    assert rows[0].reason.endswith("the large model failed (no such model): kept")


def test_bad_settings_are_one_sentence_each():
    def refused(**kw):
        with pytest.raises(SettingsError) as e:
            routing.RouteParams(**{"small": "a", "large": "b", **kw})
        return str(e.value)

    assert "give both --small and --large (given: --small)" in refused(large=None)
    assert refused(large="a").startswith("--small and --large are the same model (a)")
    assert refused(signal="bogus").startswith("--signal takes one of ")
    assert (
        refused(threshold=1.5)
        == "--threshold for min token p is a probability from 0 to 1, not 1.5"
    )
    assert refused(threshold=float("nan")).endswith("not nan")
    assert refused(signal="first_entropy", threshold=0.5) == (
        "--threshold for negated first-step entropy is a negated entropy in nats from -50 "
        "to 0, not 0.5"
    )
    assert refused(limit=0) == "--limit takes a whole number of questions, 1 or more, not 0"
    assert refused(signal="agreement", samples=0) == (
        "--signal agreement compares sampled answers: give --samples 1 or more"
    )
    assert routing.RouteParams("a", "b", signal="agreement").samples == 5
    assert routing.RouteParams("a", "b").samples == 0


BAD = [
    (["--small", "A"], "give both --small and --large (given: --small)"),
    (["--small", "A", "--large", "A"], "--small and --large are the same model (A)"),
    (["--small", "A", "--large", "B", "--signal", "nope"], "--signal takes one of"),
    (["--small", "A", "--large", "B", "--threshold", "2"], "is a probability from 0 to 1, not 2.0"),
    (["--small", "A", "--large", "B", "--limit", "0"], "--limit takes a whole number"),
]


@pytest.mark.parametrize(("argv", "words"), BAD)
def test_the_command_refuses_bad_settings_before_any_model_loads(argv, words, capsys, monkeypatch):
    from engine.backends.mlx import backend
    from engine.cli import main

    def no_load(*_a, **_k):
        raise AssertionError("a model loaded")

    monkeypatch.setattr(backend.MLXBackend, "load", no_load)
    assert main(["lab", "route", *argv, "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("logitscope: error: ") and words in err
    assert len(err.strip().splitlines()) == 1


def test_the_same_model_by_name_and_by_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGITSCOPE_MODELS_DIR", str(tmp_path))
    (tmp_path / "M").mkdir()
    with pytest.raises(SettingsError, match="the same model"):
        routing.RouteParams("M", str(tmp_path / "M"))
    routing.RouteParams("M", "N")  # another model is fine


@pytest.mark.parametrize("seed", [0, 4])
def test_point_at_any_threshold_equals_numpy_and_the_curves_own(seed):
    rows = _rows(seed, n=11, ties=False)
    r = _result(rows)
    s, sc, lc, ss, ls, st, lt = _arrays(rows)
    for t in (0.0, 0.25, 0.5, 0.77, 1.0, None):
        p = routing.point_at(r, t)
        up = np.ones_like(s, bool) if t is None else s < t
        assert p.escalated == up.sum() and p.share == pytest.approx(up.mean())
        assert p.accuracy == pytest.approx(np.where(up, lc, sc).mean())
        assert p.seconds == pytest.approx(ss.sum() + ls[up].sum())
        assert p.relative_cost == pytest.approx((ss.sum() + ls[up].sum()) / ls.sum())
        assert p.tokens == st.sum() + lt[up].sum()
    for p in r.points:  # the curve's own thresholds give the curve's own points
        assert routing.point_at(r, p.threshold) == p


def test_a_route_result_rebuilds_from_its_json():
    from engine.lab.results import result_from

    r = _result(_rows(5))
    assert result_from("route", json.loads(json.dumps(r.to_dict()))) == r
