"""A dead or frozen engine costs one run, never the session: kills and freezes at
random moments during load, prefill and decode, on the real default model."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import pytest

from engine.process.client import EngineClient
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal, read_session

HANG_S = 3.0  # well above a prefill chunk (~0.5 s) or a decode step on a slow machine
LOAD_S = 15.0  # silence allowed while the (fresh) engine imports MLX and loads the model
PROMPT = "The lighthouse keeper climbed the stairs every night, and"


def _fault_later(client: EngineClient, delay: float, sig: int, fired: list) -> threading.Timer:
    def fire():
        pid = client.pid
        if pid is not None and client.is_alive():
            os.kill(pid, sig)
            fired.append(time.monotonic())

    timer = threading.Timer(delay, fire)
    timer.start()
    return timer


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
        # Kills and freezes take turns, each at a random moment of its run's first 2 s;
        # every run starts a fresh engine (the first, and each after a fault), so its
        # load alone outlasts most of that window: load, prefill and decode all get hit.
        for i in range(4):
            sig = kinds[i % 2]
            fired: list[float] = []
            timer = _fault_later(client, rng.uniform(0.0, 2.0), sig, fired)
            run_id = journal.start_run(f"{PROMPT} ({i})", settings.to_dict(), None)
            last = None
            for record in client.generate(PROMPT, settings, str(default_model_path)):
                if record.type != "progress":
                    journal.record(run_id, record)
                last = record
            ended = time.monotonic()
            timer.cancel()
            timer.join()
            if last.type == "error":  # the fault landed during the run (load, prefill, decode)
                assert fired, last
                assert last.kind == ("engine_died" if sig == signal.SIGKILL else "engine_hung")
                assert ended - fired[0] < LOAD_S + 5
                outcomes.append(last.kind)
            else:  # it finished first (the fault, if any, came after the last record)
                assert last.type == "done", last
                finished.append(run_id)
            if fired and client.is_alive():
                os.kill(client.pid, signal.SIGCONT)
        # After all that, a clean run works and the journal holds every finished run.
        final = list(client.generate(PROMPT, settings, str(default_model_path)))
        assert final[-1].type == "done"
    finally:
        client.close()
        journal.close()
    assert {"engine_died", "engine_hung"} <= set(outcomes)
    session = read_session(journal.path)
    assert session.bad_lines == 0
    for run_id in finished:
        run = session.run(run_id)
        assert run.done is not None and len(run.tokens) >= 1
