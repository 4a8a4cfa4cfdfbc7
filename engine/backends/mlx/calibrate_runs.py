"""`lab calibrate` as the Lab window runs it: the question set answered and summarised
(engine/backends/mlx/calibrate.py), then, when the parameters ask for it (`journal`),
each question's greedy answer journaled as a run in a History session titled
"Confidence", so a question's row opens its answer in the playground with every token
chart.

A journaled answer is the row's own tokens (`answer_ids`), teacher-forced in one pass
over the prompt calibrate sent (calibrate.question_ids): each step's record holds the
distribution the greedy answer was chosen from (its candidates, entropy, temperature
sweep), as a playground run's would. The run is said as the playground says a run: the
chat's system prompt in the settings and the worked examples as the turns before the
question (a model without a chat template: the whole text, raw), greedy, stopped at a
new line. Its timings are not the answer's own (the answer was decoded in a batch with
its samples): the run's model does not claim "timings", so the speed views say they
are not reported, and the done record's `elapsed_s` is the question's batched pass.

Each of the row's samples is journaled too, as a branch of the greedy run in the same
session ({"parent": the greedy run, "step": 0, "kind": "sample"}): its own tokens
(`sample_ids`) teacher-forced over the same prompt at the samples' temperature, so that
opening the greedy run shows its samples as sibling runs in the Branches tree, each with
every token chart. A sample ends as it ended in the batch: at an end of sequence (the
eos step recorded), at a new line, or at the token limit.

After the last run the engine sends one LabStep of kind RUNS_STEP: the session's id
and each row's run id (None where the history could not be written, with `error`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import replace
from pathlib import Path

import mlx.core as mx

from engine.backends.mlx.prefix_cache import PrefixCache
from engine.lab.confidence import ConfidenceResult, QuestionRow
from engine.run.records import DoneRecord, PrefillRecord, Record, to_dict
from engine.run.settings import SamplingSettings

TITLE = "Confidence"  # the History session the answers are journaled in
RUNS_STEP = "calibrate-runs"  # the LabStep kind that names the journaled runs
UNTIMED = ("timings",)  # what a journaled answer's model does not claim to report


def calibrate_lab(record, params, prompt, settings, progress=None) -> ConfidenceResult:
    """`lab calibrate`, in the engine process for the Lab window and in this one for the
    command line (its runner in engine/lab/registry.py): load the model of `record` (the
    float32 path, as the lab runs), calibrate it on `params` (a CalibrateParams; its
    load time reported as `load_seconds`, apart from the answering) and, with
    `params.journal`, journal every answer. `prompt` and `settings` are not used: the
    questions are the prompts.

    Args:
        record: the model's ModelRecord (its folder is `record.path`).
        params: CalibrateParams.
        progress: a (message, fraction) callback or a LabReporter (cancel between
            questions: the rows measured so far come back, `cancelled` set).

    Returns:
        The ConfidenceResult.
    """
    from engine.backends.mlx.calibrate import calibrate
    from engine.backends.mlx.loader import load_model
    from engine.lab.reporter import LabStep, reporter_of

    reporter = reporter_of(progress)
    lm, _info, load = load_model(Path(record.path), prefer="speed")
    result = calibrate(lm, record.name, params, reporter, load_seconds=load)
    if params.journal and result.rows:
        model = replace(
            record,
            compute=lm.compute or record.compute,
            capabilities=tuple(c for c in record.capabilities if c not in UNTIMED),
        )
        session_id, run_ids, error = journal_answers(lm, model, params, result.rows, reporter)
        data = {"session_id": session_id, "run_ids": list(run_ids), "error": error}
        reporter.partial(LabStep(RUNS_STEP, len(run_ids), data))
    return result


def journal_answers(lm, model, params, rows, progress) -> tuple[str | None, list, str | None]:
    """Journal each row's greedy answer as a run in a new "Confidence" session, and
    each of its samples as a branch of that run (see the module docstring).

    Args:
        lm: the LoadedModel calibrate ran.
        model: the ModelRecord the runs name.
        params: the CalibrateParams (max_tokens: the answers' limit).
        rows: the result's QuestionRows.
        progress: a (message, fraction) callback.

    Returns:
        (the session id, each row's (greedy) run id, None) or, when the history cannot be written,
        (None or the id, the ids written so far and None for the rest, the message).
    """
    from engine.backends.mlx.calibrate import question_ids
    from engine.errors import LogitscopeError
    from engine.sessions.journal import Journal
    from engine.sessions.run_writer import RunWriter

    try:
        journal = Journal.create(title=TITLE)
    except LogitscopeError as e:
        return None, [None] * len(rows), str(e)
    failed: list[str] = []
    run_ids: list[str | None] = []
    model_dict = to_dict(model)
    for i, row in enumerate(rows):
        if failed:
            run_ids.append(None)
            continue
        progress(f"Saving answer {i + 1} of {len(rows)} to History", 0.99)
        prompt, settings, conversation = question_run(lm, row.question, params.max_tokens)
        writer = RunWriter(
            journal,
            prompt,
            settings.to_dict(),
            model_dict,
            failed.append,
            conversation=conversation,
        )
        # the question's prompt, prefilled once for its answer and every sample of it
        prefix = PrefixCache(lm.model)
        prefix.fill(question_ids(lm, row.question)[:-1])
        if writer.run_id is not None:
            for rec in answer_records(lm, row, prompt, settings, conversation, prefix=prefix):
                writer.record(rec)
        parent = writer.run_id if not failed else None
        run_ids.append(parent)
        sampled = replace(settings, temperature=params.temperature)
        for k in range(len(row.sample_ids) if parent is not None else 0):
            if failed:
                break
            branch = {"parent": parent, "step": 0, "kind": "sample"}
            writer = RunWriter(
                journal,
                prompt,
                sampled.to_dict(),
                model_dict,
                failed.append,
                conversation=conversation,
                branch=branch,
            )
            if writer.run_id is not None:
                records = answer_records(lm, row, prompt, sampled, conversation, k, prefix)
                for rec in records:
                    writer.record(rec)
    return journal.session_id, run_ids, failed[0] if failed else None


def question_run(lm, question: str, max_tokens: int) -> tuple[str, SamplingSettings, dict | None]:
    """One question's run as the playground says it: (prompt, settings, conversation).

    What engine/backends/mlx/calibrate.question_ids encodes: with a chat template the
    question is the prompt, ANSWER_SYSTEM the settings' system prompt and the FEW_SHOT
    turns (less one that is the question itself) the conversation's earlier messages;
    without one the whole "Question: ...\\nAnswer:" text is a raw prompt. Greedy, at
    most `max_tokens`, stopped at a new line.
    """
    from engine.backends.mlx.calibrate import ANSWER_SYSTEM, FEW_SHOT
    from engine.lab.questions import normalise

    shots = [(q, a) for q, a in FEW_SHOT if normalise(q) != normalise(question)]
    greedy = {"temperature": 0.0, "max_tokens": max_tokens, "stop": ("\n",)}
    if getattr(lm.tokenizer, "has_chat_template", False):
        return chat_question(question, max_tokens)
    lines = "".join(f"Question: {q}\nAnswer: {a}\n\n" for q, a in shots)
    text = f"{ANSWER_SYSTEM}\n\n{lines}Question: {question}\nAnswer:"
    return text, SamplingSettings(chat_template=False, **greedy), None


def chat_question(question: str, max_tokens: int) -> tuple[str, SamplingSettings, dict]:
    """A question's run in chat form (a model with a chat template, or a server, which
    applies its own): the question as the prompt, ANSWER_SYSTEM the system prompt, the
    FEW_SHOT turns (less one that is the question itself) the earlier messages; greedy,
    at most `max_tokens`, stopped at a new line."""
    from engine.backends.mlx.calibrate import ANSWER_SYSTEM, FEW_SHOT
    from engine.lab.questions import normalise

    shots = [(q, a) for q, a in FEW_SHOT if normalise(q) != normalise(question)]
    messages = []
    for q, a in shots:
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    conversation = {
        "conversation_id": secrets.token_hex(4),
        "turn": len(shots),
        "messages": messages,
    }
    settings = SamplingSettings(
        system_prompt=ANSWER_SYSTEM, temperature=0.0, max_tokens=max_tokens, stop=("\n",)
    )
    return question, settings, conversation


def sent_prompt(prompt: str, conversation: dict | None):
    """What the engine is sent for a run: its conversation and prompt, or the text."""
    if conversation is None:
        return prompt
    return [*conversation["messages"], {"role": "user", "content": prompt}]


def answer_records(
    lm,
    row: QuestionRow,
    prompt: str,
    settings: SamplingSettings,
    conversation: dict | None,
    sample: int | None = None,
    prefix=None,
) -> list[Record]:
    """The records of `row`'s greedy answer (or, with `sample`, of its sample of that
    index): its prefill, one TokenRecord per answer token (teacher-forced: the row's own
    ids), the end-of-sequence step when the answer ended on one, and the DoneRecord
    (reason eos, stop_string at a new line, or length; a sample's names branch step 0).

    The prompt's ids are calibrate's own (question_ids); `prompt`/`conversation` give
    where its system part ends; `settings` the distribution each step is recorded from
    (a sample's: the samples' temperature). `prefix`: a PrefixCache holding the start of
    the prompt (prefix_cache.py), not prefilled again; None: the whole prompt is.
    """
    from engine.backends.mlx.calibrate import question_ids
    from engine.backends.mlx.generate import step_sampler, step_stats
    from engine.backends.mlx.run_records import RunRecords
    from engine.run.prompt import EncodedPrompt, encode_prompt

    ids = question_ids(lm, row.question)
    said = encode_prompt(lm.tokenizer, sent_prompt(prompt, conversation), settings)
    enc = EncodedPrompt(ids, min(said.system_tokens, len(ids)))
    answer = list(row.answer_ids if sample is None else row.sample_ids[sample])
    step, on_device = step_sampler(replace(settings, stop=()), lm.vocab_size)  # a run's own

    def stats(i: int, forced: int | None):
        """The statistics of answer step `i` (its token `forced`; None: drawn)."""
        token, *out = step(logits[i : i + 1], None, forced)
        mx.eval(token, *out)
        return step_stats(step, on_device, out, int(token.item()))

    t0 = time.perf_counter()
    cache, held = (prefix or PrefixCache(lm.model)).cache_for(ids)
    fed = (ids + answer)[held:]
    logits = lm.model(mx.array([fed]), cache=cache)[0, len(ids) - 1 - held :]  # (A+1, V)
    logits = logits.astype(mx.float32)
    run = RunRecords(lm, enc, None, t0, cache)
    records: list[Record] = [PrefillRecord(len(ids), len(ids), 0.0, enc.system_tokens)]
    for i, tid in enumerate(answer):
        records.append(run.token(stats(i, tid), time.perf_counter(), False))
    reason = "length"
    if len(answer) < settings.max_tokens:  # it stopped: at an end of sequence or a new line
        # a sample's stop token is the one it drew; the greedy answer's, the likeliest
        stop = None if sample is None else _sample_stop(row, sample)
        last = stats(len(answer), stop)
        if last.token_id in set(lm.tokenizer.eos_token_ids):
            records.append(run.token(last, time.perf_counter(), True))
            reason = "eos"
        else:
            reason = "stop_string"
    done: DoneRecord = run.done("length", t0, 0, len(ids))  # "length": the text flushed
    records.append(
        replace(
            done,
            finish_reason=reason,
            ttft_s=None,
            prefill_tps=None,
            decode_tps=None,
            prefill_s=None,
            decode_s=None,
            peak_memory_bytes=None,
            elapsed_s=row.seconds,
            branch_step=None if sample is None else 0,
        )
    )
    return records


def _sample_stop(row: QuestionRow, k: int) -> int | None:
    """The stop token sample `k` of `row` ended at (None: not known)."""
    return row.sample_stops[k] if k < len(row.sample_stops) else None
