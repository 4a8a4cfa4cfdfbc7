"""`lab calibrate` in the engine process (lab_runs.run_experiment): progress per question,
cancel between questions with the partial result, and each greedy answer journaled as a
run whose tokens and log-probabilities are the row's own, each sample as a branch of it
whose tokens are the sample's own."""

from __future__ import annotations

import json
import math
import re
from types import SimpleNamespace

import pytest

from engine.lab.params import CalibrateParams
from engine.lab.reporter import LabReporter

QUESTIONS = [
    {"question": "What is the capital of France?", "answers": ["Paris"]},
    {"question": "How many legs does a spider have?", "answers": ["8", "eight"]},
    {"question": "What colour is the sky on a clear day?", "answers": ["blue"]},
]


def _questions(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS), encoding="utf-8")
    return str(path)


def test_the_journaled_prompt_is_the_one_calibrate_sends(smollm, tiny_lm):
    from engine.backends.mlx.calibrate import question_ids
    from engine.backends.mlx.calibrate_runs import question_run, sent_prompt
    from engine.run.prompt import encode_prompt

    for lm in (smollm, tiny_lm):
        for q in ("What is the capital of France?", "Which animal says moo?"):
            prompt, settings, conversation = question_run(lm, q, 12)
            said = encode_prompt(lm.tokenizer, sent_prompt(prompt, conversation), settings)
            assert said.ids == question_ids(lm, q)
            assert prompt == q and settings.temperature == 0 and settings.stop == ("\n",)
        # the question that is a worked example is asked without it
        assert len(question_run(lm, "Which animal says moo?", 12)[2]["messages"]) == 2
    # a model without a chat template: the whole text, raw
    raw = SimpleNamespace(tokenizer=SimpleNamespace(encode=smollm.tokenizer.encode))
    prompt, settings, conversation = question_run(raw, "What is 2 + 2?", 12)
    said = encode_prompt(raw.tokenizer, sent_prompt(prompt, conversation), settings)
    assert conversation is None and not settings.chat_template
    assert said.ids == question_ids(raw, "What is 2 + 2?") and prompt.endswith("Answer:")


def test_calibrate_runs_in_the_lab_and_journals_each_answer(default_model_path, smollm, tmp_path):
    from engine.backends.mlx.lab_runs import run_experiment
    from engine.lab.confidence import ConfidenceResult
    from engine.models.catalogue import inspect_model
    from engine.run.records import ModelRecord
    from engine.run.settings import SamplingSettings
    from engine.sessions.journal import find

    info = inspect_model(default_model_path)
    record = ModelRecord(
        info.name, str(default_model_path), info.architecture, info.quantization, 0, 2048, "cpu", 0
    )
    said, steps, asked = [], [], [0]

    def stop() -> bool:  # the person cancels once the second question has been answered
        asked[0] += 1
        return asked[0] > 2

    reporter = LabReporter(lambda m, f: said.append((m, f)), steps.append, stop)
    params = CalibrateParams(  # 12 tokens: the greedy answers end sooner, samples at 1.5 not
        questions=_questions(tmp_path), samples=2, temperature=1.5, journal=True, max_tokens=12
    )
    result = run_experiment(record, params, "", SamplingSettings(), reporter)

    # progress per question with the time left; cancelled after two: the partial result
    questions = [m for m, _f in said if m.startswith("Question")]
    assert questions[0] == "Question 1 of 3" and re.fullmatch(
        r"Question 2 of 3, about \d+ s left", questions[1]
    )
    assert result.cancelled and result.asked == 3 and result.answered == len(result.rows) == 2
    assert [s.step for s in steps if s.kind == "calibrate"] == [1, 2]

    # one run per row, in a History session titled "Confidence"
    (runs,) = [s for s in steps if s.kind == "calibrate-runs"]
    assert runs.data["error"] is None and len(runs.data["run_ids"]) == 2
    lm = smollm  # the session's load_model(default_model_path, prefer="speed")
    eos = set(lm.tokenizer.eos_token_ids)
    for row, run_id in zip(result.rows, runs.data["run_ids"], strict=True):
        session, run = find(run_id)
        assert session.title == "Confidence" and session.session_id == runs.data["session_id"]
        answer = [t for t in run.tokens if not t.eos]
        assert tuple(t.token_id for t in answer) == row.answer_ids
        # the row's own numbers: each token's log-probability, the first step's entropy
        got = [t.logprob for t in answer]
        assert got == pytest.approx(list(row.token_logprobs[: len(got)]), abs=1e-4)
        first = run.tokens[0]
        assert first.top[0].token_id == first.token_id  # greedy: the likeliest
        assert first.entropy == pytest.approx(row.first_entropy, abs=1e-3)
        assert run.prompt == row.question and run.last_prefill.total == row.prompt_tokens
        assert run.done.generated_tokens == len(row.answer_ids)
        assert run.done.text.strip() == row.answer
        assert run.done.finish_reason in ("eos", "stop_string", "length")
        assert run.done.finish_reason != "eos" or run.tokens[-1].token_id in eos
        assert run.done.decode_tps is None and run.done.elapsed_s == row.seconds
        assert not run.model_record.can("timings")  # the speed views say: not reported
        assert run.settings["temperature"] == 0 and run.settings["system_prompt"]
        assert math.isfinite(run.done.elapsed_s)
        # each sample: a run of the same session branching from the greedy one at step 0
        kids = [r for r in session.runs if (r.branch or {}).get("parent") == run_id]
        assert len(kids) == len(row.sample_ids) == len(row.sample_stops) == 2
        for kid, ids, stop in zip(kids, row.sample_ids, row.sample_stops, strict=True):
            assert kid.branch == {"parent": run_id, "step": 0, "kind": "sample"}
            assert tuple(t.token_id for t in kid.tokens if not t.eos) == ids
            assert kid.done.text.strip() == lm.tokenizer.decode(list(ids)).strip()
            assert kid.settings["temperature"] == 1.5 and kid.prompt == row.question
            assert kid.conversation == run.conversation and kid.done.branch_step == 0
            assert kid.done.finish_reason == (
                "length" if stop is None else "eos" if stop in eos else "stop_string"
            )
            if stop in eos:  # the end of sequence it drew, recorded as its last step
                assert kid.tokens[-1].eos and kid.tokens[-1].token_id == stop
    # a sample's ids differ from the greedy answer's somewhere (at 1.5, over 2 questions)
    rows = result.rows
    assert any(ids != row.answer_ids for row in rows for ids in row.sample_ids)
    assert ConfidenceResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert result.rows[0].answer_ids and result.rows[0].correct  # Paris


def test_the_command_line_journals_nothing(tmp_path):
    assert CalibrateParams().journal is False
    with pytest.raises(Exception, match="journal is true or false"):
        CalibrateParams(journal="yes")
