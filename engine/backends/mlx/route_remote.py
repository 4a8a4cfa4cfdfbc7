"""The large model of `lab route` on an OpenAI-compatible server (`--large
http://HOST:PORT/v1#MODEL`): it answers each question as the local models do (calibrate's
prompt in chat form: its system prompt and few-shot turns, greedy, at most max_tokens,
stopped at a new line), judged by the same rule, timed by the wall clock (the server's
time as this machine waits for it), its answer journaled as the records the server sent.

It only ever answers (the large model measures no signal), so its QuestionRow carries the
answer, the verdict, the time and the tokens; the signal fields are what its records
give. The server backend is opened through engine.backends.base.open_backend, as the
engine process does: this module imports no server code itself.
"""

from __future__ import annotations

import math
import time

from engine.lab.confidence import QuestionRow
from engine.lab.questions import is_correct


class RemoteAnswerer:
    """A model on a server answering questions as calibrate's prompt says."""

    def __init__(self, spec: str, params, progress=None, api_key: str | None = None):
        """Connect to `spec` (a server URL#model), checking it answers.

        Args:
            spec: the server's model spec.
            params: the RouteParams (max_tokens).
            progress: a (message, fraction) callback for the connection.
            api_key: the server's key, if it needs one.
        """
        from engine.backends.base import open_backend

        self.backend = open_backend("openai")
        if api_key:
            self.backend.api_key = api_key
        t0 = time.perf_counter()
        self.record = self.backend.load(spec, progress or (lambda m, f: None))
        self.load_seconds = time.perf_counter() - t0
        self.name = self.record.name
        self.max_tokens = params.max_tokens
        self.records: dict[int, list] = {}  # a row's records, by id(row), for the journal

    def answer(self, question) -> QuestionRow:
        """The question's row: the server's greedy answer, judged (an ErrorRecord from the
        server raises, which the caller records as that question's failure)."""
        from engine.backends.mlx.calibrate_runs import chat_question, sent_prompt

        prompt, settings, conversation = chat_question(question.question, self.max_tokens)
        t0 = time.perf_counter()
        records = list(
            self.backend.generate(sent_prompt(prompt, conversation), settings, lambda: False)
        )
        seconds = time.perf_counter() - t0
        error = next((r for r in records if r.type == "error"), None)
        if error is not None:
            raise RuntimeError(error.message)
        done = next((r for r in records if r.type == "done"), None)
        tokens = {r.step: r for r in records if r.type == "token" and not r.eos}  # re-sent steps
        answer = [tokens[s] for s in sorted(tokens)]
        text = (done.text if done is not None else "".join(t.text for t in answer)).strip()
        lps = [t.logprob for t in answer if t.logprob is not None] or [0.0]
        first = answer[0] if answer else None
        row = QuestionRow(
            line=question.line,
            question=question.question,
            accepted=question.answers,
            answer=text,
            correct=is_correct(text, question.answers),
            answer_ids=tuple(t.token_id for t in answer),
            prompt_tokens=done.prompt_tokens if done is not None else 0,
            token_logprobs=tuple(lps),
            mean_logprob=sum(lps) / len(lps),
            min_logprob=min(lps),
            first_prob=math.exp(first.logprob) if first and first.logprob is not None else 0.0,
            first_entropy=first.entropy if first and first.entropy is not None else 0.0,
            samples=(),
            agreement=None,
            cluster_entropy=None,
            clusters=0,
            seconds=seconds,
        )
        self.records[id(row)] = records
        return row

    def journal(self, journal, row: QuestionRow, name: str, notify) -> str | None:
        """Journal `row`'s answer as a run named `name`: the records the server sent."""
        from dataclasses import replace

        from engine.backends.mlx.calibrate_runs import chat_question
        from engine.run.records import to_dict
        from engine.sessions.run_writer import RunWriter

        records = self.records.pop(id(row), None)
        if journal is None or records is None:
            return None
        prompt, settings, conversation = chat_question(row.question, self.max_tokens)
        model = replace(self.record, capabilities=tuple(self.record.capabilities))
        writer = RunWriter(
            journal, prompt, settings.to_dict(), to_dict(model), notify, conversation=conversation
        )
        if writer.run_id is None:
            return None
        for record in records:
            if record.type != "progress":
                writer.record(record)
        if writer.journal is None:
            return None
        try:
            journal.meta(writer.run_id, name=name)
        except Exception as e:  # noqa: BLE001 - the history failing never stops the run
            notify(str(e))
        return writer.run_id
