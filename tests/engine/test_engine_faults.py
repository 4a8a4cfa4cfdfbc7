"""A dead or frozen engine costs one run, never the session: kills and freezes at
random moments during load, prefill and decode, on the real default model."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from engine.process.client import EngineClient
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal, read_session

HANG_S = 3.0  # well above a prefill chunk (~0.5 s) or a decode step on a slow machine
LOAD_S = 15.0  # silence allowed while the (fresh) engine imports MLX and loads the model
PROMPT = "The lighthouse keeper climbed the stairs every night, and"


def test_a_frozen_engine_ends_the_run_as_hung_and_the_next_run_works(default_model_path):
    client = EngineClient(hang_timeout_s=HANG_S)
    settings = SamplingSettings(temperature=0, max_tokens=40, chat_template=False)
    try:
        tokens, end = [], None
        for record in client.generate(PROMPT, settings, str(default_model_path)):
            if record.type == "token":
                tokens.append(record)
                if len(tokens) == 3:
                    os.kill(client.pid, signal.SIGSTOP)
                    frozen = time.monotonic()
            if record.type in ("done", "error"):
                end = record
        assert end.type == "error" and end.kind == "engine_hung", end
        assert time.monotonic() - frozen < HANG_S + 5
        assert len(tokens) == 3  # the partial output stands
        again = list(client.generate(PROMPT, settings.with_(max_tokens=3), str(default_model_path)))
        assert again[-1].type == "done" and again[-1].generated_tokens == 3
        assert client.restarts == 1
    finally:
        client.close()


@pytest.mark.slow
def test_runs_killed_or_frozen_at_random_moments(tmp_path, default_model_path):
    rng = random.Random(11)
    client = EngineClient(hang_timeout_s=HANG_S, load_timeout_s=LOAD_S)
    journal = Journal.create(tmp_path)
    settings = SamplingSettings(temperature=0, max_tokens=6, chat_template=False)
    finished, outcomes = [], []
    try:
        kinds = [signal.SIGKILL, signal.SIGSTOP]
        rng.shuffle(kinds)
        # Kills and freezes take turns, each right after a random record of its run (the
        # first seven: a run sends at least its model record, a prefill record and six
        # tokens before done); every run starts a fresh engine (the first, and each after
        # a fault), so load, prefill and decode all get hit. Records, not seconds: an
        # engine that starts in a second on one machine takes four on another.
        for i in range(4):
            sig, at = kinds[i % 2], rng.randrange(7)
            fired: list[float] = []
            run_id = journal.start_run(f"{PROMPT} ({i})", settings.to_dict(), None)
            last = None
            for n, record in enumerate(client.generate(PROMPT, settings, str(default_model_path))):
                if record.type != "progress":
                    journal.record(run_id, record)
                last = record
                if n == at and client.is_alive():
                    os.kill(client.pid, sig)
                    fired.append(time.monotonic())
            ended = time.monotonic()
            assert fired and last.type == "error", (at, last)  # the fault landed in the run
            assert last.kind == ("engine_died" if sig == signal.SIGKILL else "engine_hung")
            assert ended - fired[0] < LOAD_S + 5
            outcomes.append(last.kind)
            if client.is_alive():
                os.kill(client.pid, signal.SIGCONT)
        # After all that, a clean run works and the journal holds it whole.
        run_id = journal.start_run(PROMPT, settings.to_dict(), None)
        final = list(client.generate(PROMPT, settings, str(default_model_path)))
        for record in final:
            if record.type != "progress":
                journal.record(run_id, record)
        assert final[-1].type == "done"
        finished.append(run_id)
    finally:
        client.close()
        journal.close()
    assert {"engine_died", "engine_hung"} <= set(outcomes)
    session = read_session(journal.path)
    assert session.bad_lines == 0
    for run_id in finished:
        run = session.run(run_id)
        assert run.done is not None and len(run.tokens) >= 1
