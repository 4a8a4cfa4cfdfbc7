"""Hybrid inference on two local models: the cascade at one threshold, and its
measurement at every threshold (the arithmetic and the words: engine/lab/routing.py).

Each model answers a question exactly as `lab calibrate` does (calibrate.measure_question:
the same prompt, greedy, stopped at a new line, judged by the same rule, every signal
measured), on the float32 path as the lab runs. Its time is the seconds measure_question
takes on the question, the same work for both models (the small one also samples when
its signal compares samples).

The measurement loads one model at a time: the small one answers the whole set, then the
large one. The cascade holds both: the small model answers, and a question whose signal
is below the threshold goes to the large one. Either way both models' answers are runs
in one History session titled "Routing", each named for what happened to it ("min token
p 0.08 < 0.20: escalated"), the large model's run naming the small one's run id
("escalated from SESSION/1: ..."). A large model that fails, to load or on a question,
never loses the request: the small model's answer stays, marked as not escalated, with
the error.
"""

from __future__ import annotations

import time
from dataclasses import replace

import mlx.core as mx

from engine.backends.mlx.calibrate import (
    measure_question,
    p_true_prefix,
    question_prefix,
    stop_ids,
)
from engine.lab import routing
from engine.lab.confidence import QuestionRow
from engine.lab.reporter import reporter_of
from engine.run.records import to_dict

TITLE = "Routing"  # the History session both models' answers are journaled in


class Answerer:
    """One model answering questions as calibrate does, and journaling its answers."""

    def __init__(self, spec: str, params: routing.RouteParams, large: bool, progress=None):
        """Load `spec` on the float32 path (as the lab runs).

        Args:
            spec: the model (a folder, a .gguf file or a name).
            params: the RouteParams.
            large: True for the large model (it never samples).
            progress: a (message, fraction) callback for the load.
        """
        from engine.backends.mlx.backend import MLXBackend

        backend = MLXBackend()
        backend.prefer = "speed"
        t0 = time.perf_counter()
        self.record = backend.load(spec, progress or (lambda m, f: None))
        self.load_seconds = time.perf_counter() - t0
        self.lm, self.name = backend.lm, self.record.name
        self.params = params.calibrate_params(large)
        self.stops = stop_ids(self.lm)
        self.key = mx.random.key(params.seed)  # split per question, as calibrate does
        self.prefix = question_prefix(self.lm)  # what every question's prompt starts with
        self.true_prefix = p_true_prefix(self.lm)  # and every P(True) prompt

    def answer(self, question) -> QuestionRow:
        """The question's row (calibrate.measure_question)."""
        self.key, sub = mx.random.split(self.key)
        return measure_question(
            self.lm, question, self.params, sub, self.stops, None, self.prefix, self.true_prefix
        )

    def journal(self, journal, row: QuestionRow, name: str, notify) -> str | None:
        """Journal `row`'s greedy answer as a run named `name`, as the Lab's Confidence
        tab journals an answer (calibrate_runs: calibrate's prompt, the row's own tokens
        teacher-forced, every token chart); its run id (None when the history cannot be
        written: `notify` is called once with why)."""
        from engine.backends.mlx.calibrate_runs import UNTIMED, answer_records, question_run
        from engine.sessions.run_writer import RunWriter

        if journal is None:
            return None
        said = [c for c in self.record.capabilities if c not in UNTIMED]
        model = replace(self.record, capabilities=tuple(said))
        prompt, settings, conversation = question_run(self.lm, row.question, self.params.max_tokens)
        writer = RunWriter(
            journal, prompt, settings.to_dict(), to_dict(model), notify, conversation=conversation
        )
        if writer.run_id is None:
            return None
        for record in answer_records(
            self.lm, row, prompt, settings, conversation, None, self.prefix
        ):
            writer.record(record)
        if writer.journal is None:  # it failed on a record: notify was called
            return None
        try:
            journal.meta(writer.run_id, name=name)
        except Exception as e:  # noqa: BLE001 - the history failing never stops the run
            notify(str(e))
        return writer.run_id


def answerer(spec: str, params: routing.RouteParams, large: bool, progress=None):
    """The model `spec` answering questions: an Answerer loaded here, or for a large model
    on a server (http://HOST:PORT/v1#MODEL) a RemoteAnswerer (engine/backends/mlx/
    route_remote.py)."""
    from engine.backends.base import is_remote

    if large and is_remote(spec):
        from engine.backends.mlx.route_remote import RemoteAnswerer

        return RemoteAnswerer(spec, params, progress)
    return Answerer(spec, params, large, progress)


def _questions(params: routing.RouteParams):
    from engine.lab.questions import load_questions

    questions = load_questions(params.questions)
    return questions[: params.limit] if params.limit is not None else questions


def _file(params: routing.RouteParams) -> str:
    from engine.lab.questions import bundled_path

    return str(params.questions or bundled_path().name)


def _journal(params: routing.RouteParams, notify):
    """A new "Routing" session (None without `params.journal`, or when it cannot be made)."""
    from engine.errors import LogitscopeError
    from engine.sessions.journal import Journal

    if not params.journal:
        return None
    try:
        return Journal.create(title=TITLE)
    except LogitscopeError as e:
        notify(str(e))
        return None


def _power() -> dict:
    """The watts, how they were found, and the kWh price (engine/cost/costs.py)."""
    from engine.backends.mlx.loader import device_name
    from engine.cost.costs import load_settings
    from engine.machine.power_table import cpu_name, typical_watts

    settings = load_settings()
    if settings.watts:
        watts, source = settings.watts, "your figure"
    else:
        watts, source = typical_watts(device_name(), cpu_name())
    return {
        "watts": float(watts),
        "energy_basis": f"estimated: seconds x {watts:g} W ({source})",
        "price_per_kwh": settings.price_per_kwh,
        "currency": settings.currency,
    }


def _tokens(row: QuestionRow) -> int:
    return row.prompt_tokens + len(row.answer_ids)


def _failure(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:300] or type(e).__name__


COST_BASIS = (
    "seconds: calibrate.measure_question's time per question on each model (the greedy "
    "answer, the samples a sampled signal needs on the small model); tokens: prompt + answer"
)


def measure_route(params: routing.RouteParams, progress=None) -> routing.RouteResult:
    """Both models answer every question once; the cascade at every threshold.

    Args:
        params: RouteParams (its `threshold` is not used).
        progress: a (message, fraction) callback or a LabReporter (cancel between
            questions: the questions answered by both so far are measured).

    Returns:
        The RouteResult.
    """
    reporter = reporter_of(progress)
    questions = _questions(params)
    problems: list[str] = []
    journal = _journal(params, problems.append)
    t0 = time.perf_counter()
    small = Answerer(params.small, params, False, reporter)
    rows: list[QuestionRow] = []
    small_runs: list[str | None] = []
    n = len(questions)
    for i, q in enumerate(questions):
        if reporter.should_stop():
            break
        reporter(f"{small.name}: question {i + 1} of {n}", i / (2 * n))
        row = small.answer(q)
        rows.append(row)
        value = row.signal(params.signal)
        shown = "not measured" if value is None else f"{value:.3g}"
        name = f"route small: {routing.label(params.signal)} {shown}"
        small_runs.append(small.journal(journal, row, name, _once(problems)))
    small_name = small.name
    del small  # one model in memory at a time
    large_rows: list[QuestionRow | None] = [None] * len(rows)
    errors = [""] * len(rows)
    large_name, large_error = params.large, ""
    large_runs: list[str | None] = [None] * len(rows)
    cancelled = len(rows) < n
    if rows and not cancelled:
        try:
            large = answerer(params.large, params, True, reporter)
            large_name = large.name
        except Exception as e:  # noqa: BLE001 - a failing large model never loses a request
            large, large_error = None, f"the large model failed to load: {_failure(e)}"
            errors = [large_error] * len(rows)
        for i, q in enumerate(questions[: len(rows)] if large else ()):
            if reporter.should_stop():
                cancelled = True
                break
            reporter(f"{large_name}: question {i + 1} of {n}", (n + i) / (2 * n))
            try:
                large_rows[i] = large.answer(q)
            except Exception as e:  # noqa: BLE001 - as above: that question stays the small one's
                errors[i] = _failure(e)
                continue
            name = f"route large: the question of {small_runs[i] or 'the small model'}"
            large_runs[i] = large.journal(journal, large_rows[i], name, _once(problems))
        failures = sum(1 for e in errors if e)
        if failures and not large_error:
            large_error = (
                f"The large model failed on {failures} question{'s' if failures > 1 else ''} "
                f"(first: {next(e for e in errors if e)}): left out of the curve."
            )
    routed = [
        routing.RoutedQuestion(
            line=r.line,
            question=r.question,
            signal=r.signal(params.signal),
            small_answer=r.answer,
            small_correct=r.correct,
            small_seconds=r.seconds,
            small_tokens=_tokens(r),
            large_answer=big.answer if big else None,
            large_correct=big.correct if big else None,
            large_seconds=big.seconds if big else 0.0,
            large_tokens=_tokens(big) if big else 0,
            large_error=err,
            small_run=s_run,
            large_run=l_run,
        )
        for r, big, err, s_run, l_run in zip(
            rows, large_rows, errors, small_runs, large_runs, strict=True
        )
    ]
    if cancelled:  # the questions both models answered
        routed = [r for r in routed if r.large_correct is not None]
    return routing.summarise(
        routed,
        small=small_name,
        large=large_name,
        questions_file=_file(params),
        signal=params.signal,
        asked=n,
        large_error=large_error,
        max_tokens=params.max_tokens,
        samples=params.samples,
        cost_basis=COST_BASIS,
        journal=journal.session_id if journal else None,
        journal_error=problems[0] if problems else "",
        seconds=time.perf_counter() - t0,
        cancelled=cancelled,
        **_power(),
    )


def _once(problems: list[str]):
    """A notify callback that keeps the history's first failure."""
    return lambda message: problems.append(message) if not problems else None


def cascade_rows(questions, small, large, params, journal, reporter, problems, large_error=""):
    """The cascade over `questions`: the small model answers each; below the threshold
    the large one answers instead (see the module).

    Args:
        questions: the Questions.
        small: the small model's Answerer.
        large: the large model's Answerer, or None when it failed to load.
        params: RouteParams (signal, threshold).
        journal: the session's Journal, or None.
        reporter: a LabReporter (cancel between questions).
        problems: the history's first failure is appended here.
        large_error: why `large` is None.

    Returns:
        One CascadeQuestion per question answered.
    """
    out = []
    n = len(questions)
    for i, q in enumerate(questions):
        if reporter.should_stop():
            break
        reporter(f"Question {i + 1} of {n}", i / n)
        row = small.answer(q)
        value = row.signal(params.signal)
        up, reason = routing.decide(params.signal, value, params.threshold)
        big, error = None, ""
        if up:
            try:
                if large is None:
                    raise RuntimeError(large_error)
                big = large.answer(q)
            except Exception as e:  # noqa: BLE001 - a failing large model never loses a request
                error, up = _failure(e), False
                reason = routing.failed(reason, error)
        small_run = small.journal(journal, row, reason, _once(problems))
        large_run = None
        if big is not None:
            why = reason.removesuffix(": escalated")
            name = f"escalated from {small_run or 'an unsaved run'}: {why}"
            large_run = large.journal(journal, big, name, _once(problems))
        out.append(
            routing.CascadeQuestion(
                line=row.line,
                question=row.question,
                signal=value,
                escalated=up,
                reason=reason,
                answer=big.answer if big else row.answer,
                correct=big.correct if big else row.correct,
                small_answer=row.answer,
                small_correct=row.correct,
                small_seconds=row.seconds,
                large_answer=big.answer if big else None,
                large_correct=big.correct if big else None,
                large_seconds=big.seconds if big else 0.0,
                error=error,
                small_run=small_run,
                large_run=large_run,
            )
        )
    return out


def run_cascade(params: routing.RouteParams, progress=None) -> routing.CascadeResult:
    """The cascade at `params.threshold` on the question set, both models loaded.

    Args:
        params: RouteParams with a threshold.
        progress: a (message, fraction) callback or a LabReporter.

    Returns:
        The CascadeResult.
    """
    reporter = reporter_of(progress)
    questions = _questions(params)
    problems: list[str] = []
    journal = _journal(params, problems.append)
    small = Answerer(params.small, params, False, reporter)
    try:
        large, large_error = answerer(params.large, params, True, reporter), ""
    except Exception as e:  # noqa: BLE001 - a failing large model never loses a request
        large, large_error = None, f"it failed to load: {_failure(e)}"
    rows = cascade_rows(questions, small, large, params, journal, reporter, problems, large_error)
    return routing.cascade_result(
        rows,
        small=small.name,
        large=large.name if large else params.large,
        questions_file=_file(params),
        signal=params.signal,
        threshold=params.threshold,
        asked=len(questions),
        journal=journal.session_id if journal else None,
        journal_error=problems[0] if problems else "",
        cancelled=len(rows) < len(questions),
    )
