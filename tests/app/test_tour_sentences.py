"""The lessons' sentences on constructed records: each claims only what its numbers
show, and says so where a lesson's point does not show (no model, no window)."""

from __future__ import annotations

import math
from difflib import SequenceMatcher
from types import SimpleNamespace as NS

import pytest

from app.tour import lab_steps, read_steps, run_steps
from app.tour.false_statements import PAIRS, TINY_PAIRS, StatementPair
from app.tour.read_steps import PairScore
from app.tour.steps import pct
from engine.lab import QuantParams


def _token(token_id: int, text: str, prob: float, rank: int):
    return NS(token_id=token_id, text=text, prob=prob, logprob=math.log(prob), rank=rank)


def _read_ctx(ratios: list[float], true_p: float = 0.2, false_p: float = 0.05) -> dict:
    """Pairs whose true statements read at perplexity 10 and false ones at 10 × ratio;
    the best pair's two reads share one token, then part."""
    pairs = [StatementPair(f"True {i}.", f"False {i}.") for i in range(len(ratios))]
    scores = [PairScore(p, 10.0, 10.0 * r) for p, r in zip(pairs, ratios, strict=True)]
    shown = min(range(len(ratios)), key=ratios.__getitem__)
    true = NS(error=None, tokens=[_token(1, "A", 0.5, 1), _token(2, " yes", true_p, 3)])
    false = NS(error=None, tokens=[_token(1, "A", 0.5, 1), _token(3, " no", false_p, 9)])
    return {"scores": scores, "shown": shown, "true": true, "run": false}


def test_the_statement_pairs_are_fluent_pairs_differing_in_a_few_words():
    assert 6 <= len(PAIRS) <= 10 and 2 <= TINY_PAIRS < len(PAIRS)
    for p in PAIRS:
        t, f = p.true.split(), p.false.split()
        assert t != f and t[-1].endswith(".") and f[-1].endswith(".")
        same = sum(b.size for b in SequenceMatcher(a=t, b=f).get_matching_blocks())
        assert len(t) + len(f) - 2 * same <= 4, p  # words only one of the two has


def test_read_names_the_pair_where_the_false_statement_did_best():
    ctx = _read_ctx([1.3, 0.5, 0.8])
    s = read_steps.say_read(ctx)
    assert s.numbers == {
        "pairs": 3,
        "lower": 2,  # 0.5 and 0.8 are below 1
        "true_perplexity": 10.0,
        "false_perplexity": 5.0,
        "step": 1,
        "true": 0.2,
        "false": 0.05,
    }
    assert "Of 3 false statements read beside their true counterparts, 2 scored better" in s.text
    assert "“False 1.” (on screen) had perplexity 5.00 against 10.00 for “True 1.”" in s.text
    assert "the false “ no” 5.0 % (rank 9) and the true “ yes” 20 % (rank 3)" in s.text
    assert "the false word was the less likely, the rest of its sentence won it" in s.text
    assert "not what is true" in s.text


def test_read_says_when_every_false_statement_scored_worse():
    near = read_steps.say_read(_read_ctx([1.04, 1.3]))
    assert near.numbers["lower"] == 0 and near.numbers["false_perplexity"] == pytest.approx(10.4)
    assert "all 2 false statements scored worse than their true counterparts" in near.text
    assert "but only just: “False 0.” (on screen) had perplexity 10.40 against 10.00" in near.text
    assert f"{pct(0.04)} higher" in near.text and "not what is true" not in near.text
    far = read_steps.say_read(_read_ctx([1.7, 2.5], true_p=0.01))
    assert far.numbers["lower"] == 0 and "only just" not in far.text
    assert "Even the closest was ×1.70 the true one's: “False 0.” (on screen) had " in far.text
    assert "perplexity 17.00 against 10.00 for “True 0.”" in far.text
    assert "The lesson's point does not show with these pairs here" in far.text
    assert "the false word was the likelier, the rest of its sentence lost it" in far.text


def test_a_reads_perplexity_is_its_summarys_else_its_tokens():
    tokens = [_token(1, "A", 0.5, 1), _token(2, "B", 0.125, 4)]
    summary = NS(done=NS(reading=NS(perplexity=3.5)), tokens=tokens)
    assert read_steps.perplexity(summary) == 3.5
    bare = NS(done=None, tokens=tokens)
    assert read_steps.perplexity(bare) == pytest.approx(4.0)  # exp((ln 2 + ln 8) / 2) = 4
    assert read_steps.perplexity(NS(done=None, tokens=[])) is None


def _position_ctx(first: float, middle: float, last: float, tokens: int = 50) -> dict:
    """A 50-token context: first token [0, 1), middle [5, 45) (40), last 10 % [45, 50) (5)."""
    bins = {"first token": first, "first 10%": 1 - first - middle - last}
    bins.update({"middle": middle, "last 10%": last})
    edges = {"first token": [0, 1], "first 10%": [1, 5], "middle": [5, 45]}
    edges["last 10%"] = [45, tokens]
    return {"run": NS(error=None), "record": NS(data=NS(bins=bins, edges=edges))}


def test_position_compares_per_token_shares_when_the_middle_is_lost():
    s = run_steps.say_position(_position_ctx(0.35, 0.30, 0.27))
    assert s.numbers["middle_each"] == pytest.approx(0.30 / 40)
    assert s.numbers["last_each"] == pytest.approx(0.27 / 5)
    assert "the middle (40 tokens) 30 %" in s.text and "the last 10 % (5 tokens) 27 %" in s.text
    assert "the rest of the first 10 % (4 tokens) 8.0 %" in s.text  # every share named: 100 %
    assert "Per token that is 35 %, 5.4 % and 0.75 %, against 2 % spread evenly" in s.text
    assert "per token the middle got the least" in s.text
    assert "the first token drew the most of all (the attention sink)" in s.text


def test_position_says_when_the_middle_was_not_lost():
    s = run_steps.say_position(_position_ctx(0.01, 0.90, 0.02))  # 2.25 % a middle token
    assert s.numbers["middle_each"] == pytest.approx(0.90 / 40)
    assert "here the middle was not lost" in s.text and "the middle got the least" not in s.text
    assert "at least as much as the first token and a last-10 % token" in s.text
    assert "no attention sink shows here (a middle token drew at least as much" in s.text


def _variant(bits, mib: float, kl: float, decode: float, agree: tuple[bool, ...]):
    return NS(bits=bits, weight_bytes=int(mib * 2**20), mean_kl=kl, decode_tps=decode, agree=agree)


def _quant_ctx(kl: float, decode: float) -> dict:
    ref = _variant(None, 512, 0.0, 10.0, (True,) * 4)
    low = _variant(lab_steps.QUANT_BITS, 64, kl, decode, (True, True, False, True))
    return {"result": NS(reference="float32", variants=(ref, low))}


def test_quantization_says_whether_it_was_slight_and_faster():
    kind = lab_steps.say_quant(_quant_ctx(0.05, 25.0))
    assert kind.numbers["agree"] == 3 and kind.numbers["steps"] == 4
    assert "64 MiB instead of 512 MiB" in kind.text and "agreed on 3 of 4 steps" in kind.text
    assert "only slightly different, as the lesson says" in kind.text
    assert "25.0 tokens/s against the reference's 10.0, ×2.5 faster" in kind.text
    harsh = lab_steps.say_quant(_quant_ctx(1.1, 5.0))
    assert "more than slightly different (over 0.1 nats)" in harsh.text
    assert "5.0 tokens/s against the reference's 10.0, not faster here" in harsh.text


def test_the_quant_view_ticks_what_an_experiment_started_elsewhere_runs(qtbot, tmp_path):
    from tests.app.test_lab_typed import _lab

    lab, client = _lab(qtbot, tmp_path)
    params = QuantParams((lab_steps.QUANT_BITS,), 2)
    assert lab.quant.params() != params  # 8, 4 and 3 bits ticked at first
    assert lab.start(params)
    assert lab.quant.params() == params  # only 3-bit ticked, 2 tokens, as it runs
    qtbot.waitUntil(lambda: bool(client.backend.asked) and not lab.bridge.busy, timeout=5000)
    assert client.backend.asked[0][0] == params
    lab.close()


def _cost_ctx(energy_j: float, cost: float | None, currency: str | None) -> dict:
    done = NS(
        energy_j=energy_j,
        energy_source="estimated from 10 W",
        generated_tokens=4,
        prompt_tokens=10,
        elapsed_s=2.0,
        cost=cost,
        cost_currency=currency,
    )
    return {"run": NS(error=None, done=done)}


def test_cost_names_the_default_price_or_the_persons():
    kwh = 36_000 / 3.6e6  # 36 kJ is 0.01 kWh
    default = run_steps.say_cost(_cost_ctx(36_000, 0.17 * kwh, "USD"))
    assert default.numbers["price_per_kwh"] == pytest.approx(0.17)
    assert "0.00170 USD at the default price of 0.17 USD per kWh" in default.text
    assert "your price" not in default.text
    own = run_steps.say_cost(_cost_ctx(36_000, 0.30 * kwh, "EUR"))
    assert own.numbers["price_per_kwh"] == pytest.approx(0.30)
    assert "0.00300 EUR at your price of 0.3 EUR per kWh" in own.text
    assert "default" not in own.text
    unpriced = run_steps.say_cost(_cost_ctx(36_000, None, None))
    assert "price" not in unpriced.text and "price_per_kwh" not in unpriced.numbers
    assert "≈ 9e+03 J per answer token" in unpriced.text  # 36,000 J over 4 tokens


def _spec_ctx(speedup: float) -> dict:
    run = NS(
        k=2,
        accepted=2,
        drafted=6,
        acceptance=2 / 6,
        tokens_per_pass=1.5,
        speedup=speedup,
        same_as_target=True,
    )
    return {"result": NS(runs=(run,))}


def test_speculative_says_why_when_it_was_slower():
    slow = lab_steps.say_speculative(_spec_ctx(0.25))
    assert "accepted 2 of 6 (33 %), 1.50 tokens per pass of the big model, ×0.25" in slow.text
    assert "It was slower here: each pass of the model yielded 1.50 tokens" in slow.text
    fast = lab_steps.say_speculative(_spec_ctx(1.8))
    assert "×1.80 the speed" in fast.text and "slower" not in fast.text


def _batch_ctx(one: float, many: float) -> dict:
    rows = (NS(batch_size=1, total_tps=one, per_sequence_tps=one),)
    rows += (NS(batch_size=4, total_tps=many, per_sequence_tps=many / 4),)
    return {"result": NS(rows=rows)}


def test_batching_says_when_the_total_did_not_grow():
    grew = lab_steps.say_batch(_batch_ctx(4.0, 12.0))
    assert "12.0 tokens/s in all against 4.0 for one alone (×3.0)" in grew.text
    assert "did not grow" not in grew.text
    flat = lab_steps.say_batch(_batch_ctx(4.0, 3.6))
    assert "(×0.9)" in flat.text and "here the total did not grow" in flat.text


def _prefill_ctx(prefill: float, decode: float) -> dict:
    done = NS(prefill_tps=prefill, decode_tps=decode, prompt_tokens=5)
    return {"run": NS(error=None, done=done)}


def test_prefill_says_when_decode_was_hardly_slower():
    assert "6.7 tokens/s, 5× slower." in run_steps.say_prefill(_prefill_ctx(35.0, 6.7)).text
    close = run_steps.say_prefill(_prefill_ctx(8.0, 6.4)).text
    assert "hardly slower (prefill ×1.25 as fast): 5 prompt tokens were too few" in close


def _answer_row(line: int, correct: bool, probs: tuple[float, ...], answer: str):
    from engine.lab.confidence import QuestionRow

    lps = tuple(math.log(p) for p in probs)
    return QuestionRow(
        line=line, question=f"Question {line}?", accepted=("x",), answer=answer,
        correct=correct, answer_ids=tuple(range(len(probs))), prompt_tokens=5,
        token_logprobs=lps, mean_logprob=sum(lps) / len(lps), min_logprob=min(lps),
        first_prob=probs[0], first_entropy=1.0, samples=(), agreement=None,
        cluster_entropy=None, clusters=0,
    )  # fmt: skip


def _confidence(rows) -> dict:
    from engine.lab.confidence import summarise

    r = summarise(rows, model="m", questions_file="q", samples=2, temperature=1.0, asked=len(rows))
    return {"result": r}


def test_read_adds_the_most_confident_wrong_answer_by_arithmetic_mean():
    """Wrong line 2 has the higher arithmetic mean (0.5 against 0.4) but the lower
    geometric one (0.3 against 0.4): the sentence names line 2, by the row's figure."""
    rows = [
        _answer_row(1, True, (0.8, 0.8), "Paris"),
        _answer_row(2, False, (0.9, 0.1), "\n  Lyon\nand more"),
        _answer_row(3, False, (0.4, 0.4), "Nice"),
        _answer_row(4, True, (0.45,), "Rome"),
    ]
    ctx = _read_ctx([0.5, 0.8]) | {"confidence": _confidence(rows)}
    s = read_steps.say_read(ctx)
    assert s.numbers["false_perplexity"] == 5.0  # the read's numbers stay
    assert s.numbers["questions"] == 4 and s.numbers["right"] == 2
    assert s.numbers["wrong_line"] == 2 and s.numbers["right_below"] == 1
    assert s.numbers["wrong_mean_prob"] == rows[1].signal("mean_prob") == pytest.approx(0.5)
    assert read_steps.most_confident_wrong(ctx["confidence"]["result"]) is rows[1]
    assert "asked it 4 bundled questions: 2 right." in s.text
    assert (
        "Its most confident wrong answer: “Lyon” to “Question 2?”, with a mean token "
        "probability of 50 %, above 1 of its 2 right answers." in s.text
    )


def test_read_says_when_no_answer_was_wrong_and_when_the_lab_did_not_finish():
    rows = [_answer_row(1, True, (0.8,), "Paris"), _answer_row(2, True, (0.3,), "Rome")]
    s = read_steps.say_read(_read_ctx([0.5]) | {"confidence": _confidence(rows)})
    assert "asked it 2 bundled questions: 2 right. None of its answers was wrong" in s.text
    assert "wrong_line" not in s.numbers and s.numbers["right"] == 2
    cut = read_steps.say_read(_read_ctx([0.5]) | {"confidence": {"failed": "no"}})
    assert "did not finish its questions" in cut.text and "questions" not in cut.numbers
    server = read_steps.say_read(_read_ctx([0.5]))  # not a local model: nothing asked
    assert "Confidence tab" not in server.text


def test_read_says_a_wrong_answer_below_every_right_one():
    rows = [_answer_row(1, True, (0.8,), "Paris"), _answer_row(2, False, (0.3,), "Lyon")]
    s = read_steps.say_read(_read_ctx([0.5]) | {"confidence": _confidence(rows)})
    assert "asked it 2 bundled questions: 1 right. Its most confident wrong" in s.text
    assert "probability of 30 %, below each of its right answers." in s.text
    assert s.numbers["right_below"] == 0
