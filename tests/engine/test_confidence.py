"""Confidence against correctness: the question files, the correctness rule, the set's
figures against NumPy written here, and the real model's per-question figures against a
bare mlx-lm pass."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from engine.errors import SettingsError
from engine.lab import confidence_metrics as cm
from engine.lab.confidence import QuestionRow, cluster_stats, summarise
from engine.lab.questions import bundled_path, is_correct, load_questions, normalise


def _np_auroc(scores, correct) -> float:
    s, c = np.asarray(scores, float), np.asarray(correct, bool)
    pos, neg = s[c], s[~c]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def _np_ece(conf, correct, bins=10) -> float:
    conf, correct = np.asarray(conf, float), np.asarray(correct, float)
    idx = np.clip(np.floor(conf * bins).astype(int), 0, bins - 1)
    return float(
        sum(
            (idx == b).mean() * abs(correct[idx == b].mean() - conf[idx == b].mean())
            for b in range(bins)
            if (idx == b).any()
        )
    )


def _np_risk_coverage(scores, correct):
    order = np.lexsort((np.arange(len(scores)), -np.asarray(scores, float)))
    c = np.asarray(correct, float)[order]
    k = np.arange(1, len(c) + 1)
    return k / len(c), np.cumsum(c) / k


def _np_risk_coverage_expected(scores, correct):
    """Each question's chance of being among the k kept when ties go in random order:
    clip((k - questions scoring above it) / questions tied with it, 0, 1)."""
    s, c = np.asarray(scores, float), np.asarray(correct, float)
    above = (s[None, :] > s[:, None]).sum(axis=1)  # (n,)
    tied = (s[None, :] == s[:, None]).sum(axis=1)  # (n,), itself included
    k = np.arange(1, len(s) + 1)[:, None]  # (n, 1)
    kept = np.clip((k - above[None, :]) / tied[None, :], 0, 1)  # (k, n)
    return k[:, 0] / len(s), (kept * c[None, :]).sum(axis=1) / k[:, 0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_set_figures_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    n = 57
    conf = np.round(rng.random(n), 2)  # rounded: ties happen, and count half
    correct = rng.random(n) < conf  # a signal that means something
    assert cm.auroc(conf.tolist(), correct.tolist()) == pytest.approx(_np_auroc(conf, correct))
    bins, ece = cm.reliability(conf.tolist(), correct.tolist())
    assert ece == pytest.approx(_np_ece(conf, correct), abs=1e-12)
    assert sum(b.count for b in bins) == n and len(bins) == 10
    cov, acc = _np_risk_coverage(conf, correct)
    curve = cm.risk_coverage(conf.tolist(), correct.tolist())
    assert np.allclose([c for c, _ in curve], cov) and np.allclose([a for _, a in curve], acc)


def test_auroc_undefined_is_said_in_words():
    assert cm.auroc([0.2, 0.9], [True, True]) is None
    rows = [_row(i, True, -0.1 * i) for i in range(4)]
    result = summarise(rows, model="m", questions_file="q", samples=0, temperature=1.0, asked=4)
    assert all(s.auroc is None for s in result.signals)
    assert "every answer was right" in result.sentence and "nan" not in result.sentence.lower()
    json.dumps(result.to_dict(), allow_nan=False)  # no NaN anywhere
    wrong = [_row(i, False, -0.1 * i) for i in range(3)]
    none_right = summarise(
        wrong, model="m", questions_file="q", samples=0, temperature=1.0, asked=3
    )
    assert "no answer was right" in none_right.sentence and none_right.accuracy == 0.0


def _row(i: int, correct: bool, mean_lp: float, agreement=None) -> QuestionRow:
    return QuestionRow(
        line=i + 1,
        question=f"q{i}",
        accepted=("a",),
        answer="a" if correct else "b",
        correct=correct,
        answer_ids=(1,),
        prompt_tokens=5,
        token_logprobs=(mean_lp,),
        mean_logprob=mean_lp,
        min_logprob=mean_lp,
        first_prob=math.exp(mean_lp),
        first_entropy=-mean_lp,
        samples=(),
        agreement=agreement,
        cluster_entropy=None,
        clusters=0,
    )


def test_the_sentence_names_the_best_signal_with_its_auroc():
    rows = [_row(0, True, -0.1, 1.0), _row(1, False, -0.2, 0.0), _row(2, True, -0.3, 0.8)]
    r = summarise(rows, model="m", questions_file="q", samples=5, temperature=1.0, asked=3)
    assert r.accuracy == pytest.approx(2 / 3)
    agree = next(s for s in r.signals if s.key == "agreement")
    mean = next(s for s in r.signals if s.key == "mean_prob")
    assert agree.auroc == 1.0 and mean.auroc == 0.5
    assert "sample agreement separates right from wrong answers with AUROC 1.00" in r.sentence
    assert "mean token probability with 0.50" in r.sentence
    from engine.lab.confidence_stats import half_up

    lo, hi = half_up(agree.auroc_low, 2), half_up(agree.auroc_high, 2)
    assert f"with AUROC 1.00 (95 % interval {lo}–{hi}); " in r.sentence
    assert r.sentence.startswith("The model answered 67 % of the questions right (2 of 3).")


def test_the_correctness_rule():
    assert is_correct("The capital is Paris.", ("Paris",))
    assert is_correct("  Zürich\nand more", ("Zurich",))  # accents, first line
    assert not is_correct("Lyon\nParis", ("Paris",))  # only the first line counts
    assert not is_correct("123", ("12",))  # whole words only
    assert is_correct("twelve", ("12", "twelve"))
    assert is_correct("La Paz", ("La Paz",)) and normalise("The Hague") == "hague"
    assert is_correct("A", ("A",))  # a word that is only an article stays itself
    assert not is_correct("", ("Paris",))


def test_clusters_of_samples():
    agree, entropy, k, largest = cluster_stats("Paris", ["Paris", "paris.", "Lyon", "Paris!"])
    assert agree == 0.75 and k == 2 and largest == 0.75
    assert entropy == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    assert cluster_stats("x", []) == (None, None, 0, None)
    # by meaning: the greedy answer's cluster need not be the largest
    q = "How many sides does a hexagon have?"
    samples = ["six", "A hexagon has six sides.", "Seven", "It has 7 sides", "7", "6"]
    agree, entropy, k, largest = cluster_stats("5", samples, q)
    assert (agree, k, largest) == (0.0, 2, 0.5)
    assert entropy == pytest.approx(math.log(2))
    agree, _, _, largest = cluster_stats("It has six.", samples, q)
    assert agree == largest == 0.5


def test_agreement_by_meaning():
    from engine.lab.answer_meaning import Meaning, digits_for_number_words

    hexagon = Meaning("How many sides does a hexagon have?")
    same = ["6", "six", "A hexagon has six sides."]
    assert all(hexagon.same(a, b) for a in same for b in same)
    assert hexagon.clusters(same) == [[0, 1, 2]]
    assert not Meaning().same("Paris", "Lyon") and Meaning().clusters(["Paris", "Lyon"]) == [
        [0],
        [1],
    ]
    assert not Meaning().same("Paris", "Paris or Lyon")  # one holds more than the other
    assert Meaning("What is the capital of France?").same("Paris", "The capital is Paris.")
    assert Meaning("Which is larger, the Sun or the Moon?").same("The Sun", "sun")
    words = "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    words += "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
    assert digits_for_number_words(words.split()) == [str(i) for i in range(21)]
    for text, want in [
        ("twenty one", "21"),
        ("ninety nine", "99"),
        ("forty", "40"),
        ("hundred", "100"),
        ("one hundred and five", "105"),
        ("three thousand four hundred", "3400"),
        ("two million", "2000000"),
        ("one two", "1 2"),
        ("twenty twenty", "20 20"),
    ]:
        assert " ".join(digits_for_number_words(text.split())) == want, text
    assert Meaning().same("a hundred", "100") and Meaning().same("Twenty-one", "21")


def test_the_bundled_set():
    qs = load_questions()
    assert len(qs) >= 200 and bundled_path().suffix == ".jsonl"
    assert len({q.lang for q in qs}) >= 3 and len({q.topic for q in qs}) >= 6
    assert {1, 2, 3} <= {q.level for q in qs}
    assert len({q.question for q in qs}) == len(qs)  # no duplicates
    assert all(is_correct(q.answers[0], q.answers) for q in qs)  # its own answer is right


@pytest.mark.parametrize(
    "name, text, said",
    [
        (
            "a.jsonl",
            '{"question": "Q?", "answers": ["A"]}\n{"question": "Q2?"\n',
            "line 2: not JSON",
        ),
        (
            "a.jsonl",
            '{"question": "Q?", "answers": ["A"]}\n\n{"question": "Q?", "answers": []}',
            "line 3",
        ),
        ("a.jsonl", '{"question": "", "answers": ["A"]}', "line 1: question must be non-empty"),
        ("a.jsonl", '["Q?", "A"]', "line 1: give an object"),
        ("a.jsonl", "\n\n", "holds no questions"),
        ("a.csv", "q,a\nWhat?,x\n", "line 1: the header needs the columns question and answers"),
        ("a.csv", "question,answers\nWhat?,x\nWhere?,\n", "line 3"),
        ("a.csv", "question,answers\nWhat?,x,extra\n", "line 2: more cells"),
    ],
)
def test_a_bad_question_file_is_one_clear_sentence(tmp_path, name, text, said):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match=said.replace("?", r"\?")):
        load_questions(path)


def test_csv_and_jsonl_sets_load(tmp_path):
    (tmp_path / "s.csv").write_text("Question,Answers\nWhat is 2+2?,4|four\n", encoding="utf-8")
    (q,) = load_questions(tmp_path / "s.csv")
    assert q.answers == ("4", "four") and q.line == 2
    (tmp_path / "s.jsonl").write_text('{"question": "Capital of Peru?", "answers": "Lima"}\n')
    assert load_questions(tmp_path / "s.jsonl")[0].answers == ("Lima",)
    with pytest.raises(SettingsError, match="no such question file"):
        load_questions(tmp_path / "missing.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SettingsError, match="not UTF-8"):
        load_questions(tmp_path / "bin.jsonl")


QUESTIONS = [
    {"question": "What is the capital of France?", "answers": ["Paris"]},
    {"question": "What is the chemical symbol for gold?", "answers": ["Au"]},
    {"question": "What is the capital of Burkina Faso?", "answers": ["Ouagadougou"]},
]


def test_real_model_figures_equal_a_bare_mlx_lm_pass(default_model_path, smollm, tmp_path):
    import mlx.core as mx
    from mlx_lm import load
    from mlx_lm.utils import dequantize_model

    from engine.backends.mlx.calibrate import (
        TRUE_QUESTION,
        calibrate,
        p_true_ids,
        question_ids,
        stop_ids,
    )
    from engine.lab.params import CalibrateParams

    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS), encoding="utf-8")
    lm = smollm  # the session's load_model(default_model_path, prefer="speed")
    params = CalibrateParams(questions=str(path), samples=3, seed=1, max_tokens=12)
    result = calibrate(lm, "smol", params)  # 12 tokens: the samples need not run to 32
    assert result.answered == result.asked == 3 and len(result.rows) == 3
    # Bare mlx-lm: its own load, float32, the prompt and answer teacher-forced at once.
    bare, tok = load(str(default_model_path))
    bare.set_dtype(mx.float32)
    bare = dequantize_model(bare)
    bare.set_dtype(mx.float32)
    stops = stop_ids(lm)
    true_ids = {tok.encode(w, add_special_tokens=False)[0] for w in ("True", " True")}
    false_ids = {tok.encode(w, add_special_tokens=False)[0] for w in ("False", " False")}
    for row in result.rows:
        ids = question_ids(lm, row.question)  # the prompt (checked against the count)
        assert len(ids) == row.prompt_tokens and row.answer_ids
        full = mx.array([ids + list(row.answer_ids)])
        logits = bare(full)[0].astype(mx.float32)  # (L, V)
        logp = np.array(logits - mx.logsumexp(logits, axis=-1, keepdims=True), dtype=np.float64)
        steps = range(len(ids) - 1, len(ids) - 1 + len(row.answer_ids))
        want = [logp[s, t] for s, t in zip(steps, row.answer_ids, strict=True)]
        assert np.allclose(row.token_logprobs[: len(want)], want, atol=1e-4)
        assert row.answer_ids[0] == int(np.argmax(logp[len(ids) - 1]))  # greedy
        p0 = np.exp(logp[len(ids) - 1])
        assert row.first_prob == pytest.approx(p0.max(), abs=1e-4)
        assert row.first_entropy == pytest.approx(-(p0 * logp[len(ids) - 1]).sum(), abs=1e-4)
        assert row.mean_logprob == pytest.approx(np.mean(want), abs=1e-4)
        assert row.signal("mean_prob") == pytest.approx(np.mean(np.exp(want)), abs=1e-4)
        # not cut: the greedy step after the answer is a stop (end of sequence or newline)
        assert row.cut == (int(np.argmax(logp[-1])) not in stops)
        assert len(row.samples) == 3 and row.correct == is_correct(row.answer, row.accepted)
        # P(True): the prompt as the bare tokenizer's chat template writes it, one pass
        text = f"Question: {row.question}\nProposed answer: {row.answer}\n{TRUE_QUESTION}"
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
        )
        assert p_true_ids(lm, row.question, row.answer) == list(prompt)
        last = bare(mx.array([prompt]))[0, -1].astype(mx.float32)
        p = np.array(mx.softmax(last, axis=-1), dtype=np.float64)
        yes, no = p[sorted(true_ids)].sum(), p[sorted(false_ids)].sum()
        assert row.p_true_raw == pytest.approx(yes, abs=1e-4)
        assert row.p_true == pytest.approx(yes / (yes + no), abs=1e-4)
    assert result.rows[0].correct  # SmolLM2 knows the capital of France
    assert [s.key for s in result.signals].count("p_true") == 1
    json.dumps(result.to_dict(), allow_nan=False)
    short = calibrate(lm, "smol", CalibrateParams(questions=str(path), samples=0, max_tokens=1))
    cut = [len(r.answer_ids) == 1 and r.cut for r in short.rows]
    assert short.cut == sum(cut) and short.max_tokens == 1
    for r, was in zip(short.rows, result.rows, strict=True):  # cut where the answer went on
        assert r.cut == (len(was.answer_ids) > 1)
    if short.cut:
        assert "cut at the 1-token limit" in short.sentence


def _rows_for_overrides(seed: int = 3, n: int = 12) -> list[QuestionRow]:
    rng = np.random.default_rng(seed)
    lps = np.round(-rng.random(n) * 3, 2)
    correct = rng.random(n) < np.exp(lps)
    correct[:2] = [True, False]  # both kinds
    return [
        _row(i, bool(c), float(lp), agreement=float(a))
        for i, (c, lp, a) in enumerate(zip(correct, lps, np.round(rng.random(n), 1), strict=True))
    ]


def test_a_persons_verdicts_recompute_every_figure():
    from engine.lab.confidence import ConfidenceResult, with_overrides

    rows = _rows_for_overrides()
    fields = dict(model="m", questions_file="q", samples=5, temperature=1.0, asked=len(rows))
    base = summarise(rows, **fields)
    assert base.overrides == () and not any(r.overridden for r in base.rows)
    flips = {0: False, 4: not rows[4].correct, 7: rows[7].correct}  # 7: the rule's own verdict
    out = with_overrides(base, flips)
    want = [r.correct for r in rows]
    want[0], want[4] = False, not want[4]
    assert [r.correct for r in out.rows] == want
    assert out.overrides == (0, 4) and [r.overridden for r in out.rows].count(True) == 2
    assert out.accuracy == pytest.approx(np.mean(want))
    for s in out.signals:  # each figure from NumPy on the re-judged verdicts
        scores = [r.signal(s.key) for r in rows]
        if None in scores:  # cluster signals: not measured on these rows
            assert s.auroc is None and s.coverage == ()
            continue
        assert s.auroc == pytest.approx(_np_auroc(scores, want))
        cov, acc = _np_risk_coverage_expected(scores, want)
        assert np.allclose(s.accuracy, acc) and np.allclose(s.coverage, cov)
        if s.ece is not None:
            assert s.ece == pytest.approx(_np_ece(scores, want), abs=1e-12)
    right = sum(want)
    assert f"answered {round(100 * right / 12)} % of the questions right ({right} of 12)" in (
        out.sentence
    )
    # kept with the result: JSON round trip, and the same call takes a row back to the rule
    again = ConfidenceResult.from_dict(json.loads(json.dumps(out.to_dict())))
    assert again == out and again.overrides == (0, 4)
    back = with_overrides(out, {0: rows[0].correct, 4: rows[4].correct})
    assert back == base
    with pytest.raises(IndexError, match="no row 12"):
        with_overrides(base, {12: True})


def test_a_constant_signal_is_not_informative():
    rows = [_row(i, i % 2 == 0, -0.5, agreement=1.0) for i in range(6)]
    r = summarise(rows, model="m", questions_file="q", samples=5, temperature=1.0, asked=6)
    measured = [s for s in r.signals if s.coverage]  # cluster signals: None on these rows
    assert {s.key for s in measured} == {
        "mean_prob",
        "geo_mean_prob",
        "min_prob",
        "first_prob",
        "first_entropy",
        "agreement",
    }
    for s in measured:
        assert not s.informative and s.auroc is None and s.auroc_low is None
    assert "sample agreement are the same on every question: not informative here" in (r.sentence)
    assert "separates" not in r.sentence


def test_auroc_interval_equals_a_numpy_bootstrap_with_the_same_seed():
    from engine.lab.confidence_stats import auroc_interval

    rng = np.random.default_rng(5)
    n = 40
    conf = np.round(rng.random(n), 1)  # ties
    correct = rng.random(n) < conf
    draws = np.random.default_rng(0).integers(0, n, size=(1000, n))
    values = [
        _np_auroc(conf[d], correct[d]) for d in draws if correct[d].any() and not correct[d].all()
    ]
    low, high = auroc_interval(conf.tolist(), correct.tolist(), resamples=1000, seed=0)
    assert (low, high) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])), abs=1e-12)
    assert low < cm.auroc(conf.tolist(), correct.tolist()) < high
    assert auroc_interval([0.1, 0.2], [True, True]) is None


def _brute_force_curve(scores, correct):
    """The mean over every ordering of the questions of the curve that breaks ties by
    that order."""
    n = len(scores)
    total = np.zeros(n)
    count = 0
    for perm in itertools.permutations(range(n)):
        rank = {q: p for p, q in enumerate(perm)}
        order = sorted(range(n), key=lambda i: (-scores[i], rank[i]))
        total += np.cumsum([correct[i] for i in order]) / np.arange(1, n + 1)
        count += 1
    return total / count


@pytest.mark.parametrize(
    "scores, correct",
    [
        ([0.5, 0.5, 0.5, 0.9, 0.1, 0.5, 0.9], [True, False, False, True, False, True, False]),
        ([0.3] * 6, [True, False, True, False, False, False]),
        ([0.9, 0.8, 0.8, 0.2, 0.2], [False, True, False, True, True]),
    ],
)
def test_ties_are_averaged_over_every_ordering(scores, correct):
    from engine.lab.confidence_stats import risk_coverage_ties_averaged

    n = len(scores)
    want = _brute_force_curve(scores, correct)
    curve = risk_coverage_ties_averaged(scores, correct)
    assert np.allclose([a for _, a in curve], want, atol=1e-12)
    assert [c for c, _ in curve] == pytest.approx([k / n for k in range(1, n + 1)])
    rows = [_row(i, c, math.log(s)) for i, (s, c) in enumerate(zip(scores, correct, strict=True))]
    fields = dict(model="m", questions_file="q", samples=0, temperature=1.0, asked=n)
    r = summarise(rows, **fields)
    geo = next(s for s in r.signals if s.key == "geo_mean_prob")
    k = math.ceil(0.8 * n)  # abstain on 20 %: keep the ceil(0.8 n) most confident
    assert geo.accuracy_abstain_20 == pytest.approx(want[k - 1], abs=1e-12)
    reversed_ = summarise(rows[::-1], **fields)  # the question order changes nothing
    assert next(s for s in reversed_.signals if s.key == "geo_mean_prob").accuracy == (
        pytest.approx(geo.accuracy, abs=1e-12)
    )


def test_percentages_are_rounded_half_up():
    from engine.lab.confidence_stats import half_up, pct

    assert pct(0.125) == "13 %" and f"{0.125:.0%}" == "12%"  # Python's rounds half to even
    assert pct(57 / 200) == "29 %" and pct(2 / 3) == "67 %" and pct(1.0) == "100 %"
    assert pct(0.005) == "1 %" and pct(0.0049) == "0 %"
    assert half_up(0.125, 2) == "0.13" and half_up(0.655, 2) == "0.66" and half_up(1, 2) == "1.00"
    rows = [_row(i, i == 0, -0.1 * i) for i in range(8)]  # 1 right of 8: 12.5 %
    r = summarise(rows, model="m", questions_file="q", samples=0, temperature=1.0, asked=8)
    assert r.sentence.startswith("The model answered 13 % of the questions right (1 of 8).")
    assert "Only 1 right answer: with fewer than 5 right or 5 wrong the AUROCs are rough" in (
        r.sentence
    )
    rows = [_row(i, i < 3, -0.1 * i) for i in range(6)]
    both = summarise(rows, model="m", questions_file="q", samples=0, temperature=1.0, asked=6)
    assert "Only 3 right answers and 3 wrong answers:" in both.sentence
    assert r.warning and "[low, high)" in r.bins_rule and "[0.9, 1] closed" in r.bins_rule


def test_the_arithmetic_and_geometric_means_and_cut_answers():
    lps = [-0.1, -2.0, -0.5]
    row = _row(0, True, float(np.mean(lps)))
    row = dataclasses.replace(row, token_logprobs=tuple(lps), cut=True)
    assert row.signal("mean_prob") == pytest.approx(np.mean(np.exp(lps)))
    assert row.signal("geo_mean_prob") == pytest.approx(np.exp(np.mean(lps)))
    assert row.signal("mean_prob") > row.signal("geo_mean_prob")  # AM >= GM
    rows = [row] + [_row(i, i % 2 == 0, -0.2 * i) for i in range(1, 12)]
    r = summarise(
        rows, model="m", questions_file="q", samples=0, temperature=1.0, asked=12, max_tokens=32
    )
    assert r.cut == 1 and "1 of the 12 answers was cut at the 32-token limit" in r.sentence
    names = [s.name for s in r.signals]
    assert "the answer's geometric mean probability" in names
    assert "the answer's arithmetic mean token probability" in names
    assert r.warning == ""  # 7 right, 5 wrong


def test_the_command_prints_every_definition(capsys):
    from engine.cli.lab_calibrate import _print

    rows = _rows_for_overrides()
    rows[3] = dataclasses.replace(rows[3], cut=True, correct=False)
    r = summarise(
        rows,
        model="m",
        questions_file="q",
        samples=5,
        temperature=1.0,
        asked=12,
        max_tokens=32,
        seconds=6.0,
        questions_per_minute=120.0,
        load_seconds=2.5,
        rate_basis="answering only; the model's load (2.5 s) is not included",
    )
    _print(r)
    out = capsys.readouterr().out
    agree = next(s for s in r.signals if s.key == "agreement")
    assert f"AUROC {agree.auroc:.3f} (95 % {agree.auroc_low:.2f}-{agree.auroc_high:.2f})" in out
    assert "cut by the 32-token limit: 1 of 12 answers" in out and "[cut]" in out
    assert "120.0 questions per minute (answering only; the model's load (2.5 s) is not" in out
    assert "[low, high)" in out and "random order" in out
    data = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert data["cut"] == 1 and data["load_seconds"] == 2.5 and data["rows"][3]["cut"]
    assert {"auroc_low", "auroc_high", "informative"} <= set(data["signals"][0])
