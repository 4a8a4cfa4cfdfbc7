"""Routing on the two real models, SmolLM2-135M (small) and Gemma 3 270M (large), on the
bundled set's first 3 questions: the curve recomputed in NumPy from the journaled runs
(each run's tokens give the signal, its text the verdict, its done record the time), and
the cascade at a threshold escalating exactly the questions below it, with the same
greedy answers, each escalated run naming the small one's."""

from __future__ import annotations

import numpy as np
import pytest

from engine.lab import routing
from engine.lab.questions import is_correct, load_questions

N = 3  # enough for a curve with three cuts and a cascade that escalates one of three


@pytest.fixture(scope="module")
def measured(default_model_path, gemma_path):
    from engine.backends.mlx.route_runs import measure_route

    params = routing.RouteParams(str(default_model_path), str(gemma_path), limit=N)
    return measure_route(params)


def _journaled(run_id: str, accepted):
    """(min token p, verdict, seconds, tokens) of a journaled run, from its records."""
    from engine.sessions.journal import find

    _session, run = find(run_id)
    answer = [t for t in run.tokens if not t.eos] or run.tokens  # an empty answer: its stop
    done = run.done
    return (
        float(np.exp(min(t.logprob for t in answer))),
        is_correct(done.text, accepted),
        done.elapsed_s,
        done.prompt_tokens + len([t for t in run.tokens if not t.eos]),
        run.name,
    )


def test_the_curve_equals_a_recomputation_from_the_journaled_runs(measured):
    from engine.sessions.journal import find

    r = measured
    assert (r.asked, r.answered, r.compared) == (N, N, N) and not r.cancelled
    assert find(r.journal)[0].title == "Routing"
    questions = load_questions(None)[:N]
    small, large = [], []
    for q, row in zip(questions, r.rows, strict=True):
        s = _journaled(row.small_run, q.answers)
        big = _journaled(row.large_run, q.answers)
        assert big[4] == f"route large: the question of {row.small_run}"
        small.append(s)
        large.append(big)
    sig = np.array([s[0] for s in small])
    sc, lc = np.array([s[1] for s in small], float), np.array([b[1] for b in large], float)
    ss, ls = np.array([s[2] for s in small]), np.array([b[2] for b in large])
    st, lt = np.array([s[3] for s in small]), np.array([b[3] for b in large])
    # the journaled runs are teacher-forced in one pass, the answers were decoded step by
    # step: their log-probabilities agree to 1e-4 (tests/engine/test_calibrate_runs.py)
    np.testing.assert_allclose([row.signal for row in r.rows], sig, rtol=1e-3)
    cuts = [*np.unique([row.signal for row in r.rows]), np.inf]
    assert len(r.points) == len(cuts)
    for p, cut in zip(r.points, cuts, strict=True):
        up = np.array([row.signal for row in r.rows]) < cut
        assert p.escalated == up.sum()
        assert p.accuracy == pytest.approx(np.where(up, lc, sc).mean(), abs=1e-12)
        assert p.seconds == pytest.approx(ss.sum() + ls[up].sum(), rel=1e-9)
        assert p.tokens == st.sum() + lt[up].sum()
    assert r.small_accuracy == pytest.approx(sc.mean()) and r.large_accuracy == pytest.approx(
        lc.mean()
    )
    if r.large_accuracy > r.small_accuracy:
        share = np.array([p.share for p in r.points])
        pgr = (np.array([p.accuracy for p in r.points]) - sc.mean()) / (lc.mean() - sc.mean())
        assert r.apgr == pytest.approx(np.trapezoid(pgr, share), abs=1e-12)
    else:  # SmolLM2 answers more right than Gemma 3 270M: said so, no APGR
        assert r.apgr is None and "no gap to recover" in r.why
        assert "the cascade cannot help" in r.sentence
    keep = [p for p in r.points if p.accuracy >= 0.95 * r.large_accuracy - 1e-12]
    assert r.target_point == min(keep, key=lambda p: (p.seconds, p.share))
    print(r.sentence)


def test_the_cascade_escalates_below_the_threshold_with_the_same_answers(
    measured, default_model_path, gemma_path
):
    from engine.backends.mlx.route_runs import run_cascade
    from engine.sessions.journal import find

    values = sorted({row.signal for row in measured.rows})
    threshold = values[len(values) // 2]  # escalates the lower half, keeps the rest
    r = run_cascade(
        routing.RouteParams(
            str(default_model_path),
            str(gemma_path),
            limit=N,
            threshold=threshold,
        )
    )
    assert r.answered == N and r.failed == 0
    for c, m in zip(r.rows, measured.rows, strict=True):
        assert c.escalated == (m.signal < threshold)
        assert c.small_answer == m.small_answer and c.signal == pytest.approx(m.signal, rel=1e-6)
        assert c.reason == routing.decide("min_prob", c.signal, threshold)[1]
        assert find(c.small_run)[1].name == c.reason
        if c.escalated:
            assert c.answer == m.large_answer and c.correct == m.large_correct
            why = c.reason.removesuffix(": escalated")
            assert find(c.large_run)[1].name == f"escalated from {c.small_run}: {why}"
        else:
            assert c.answer == m.small_answer and c.large_run is None
    assert r.escalated == sum(m.signal < threshold for m in measured.rows) > 0
