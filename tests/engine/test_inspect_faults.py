"""An inspection (and every other op a person waits on) whose engine dies or hangs
says so, names the phase, and never reports a result it did not compute.

Faults are real signals: the engine sends itself SIGKILL or SIGSTOP at a chosen
phase (LOGITSCOPE_FAULT, read when the engine process starts), on the real model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from engine.inside.inspect_request import InspectRequest
from engine.lab import QuantParams
from engine.process.client import EngineClient
from engine.process.worker import FAULT_ENV
from engine.run.settings import SamplingSettings

HANG_S = 3.0  # the client's silence limit in these tests
LOAD_S = 30.0  # a fresh engine imports MLX and loads the model within this
PROMPT = "The capital of France is"
GREEDY = SamplingSettings(temperature=0, max_tokens=4, chat_template=False, seed=0)
LENS = InspectRequest("lens", step=2, layer=0, head=None, top_k=3)


@pytest.fixture
def fault(monkeypatch):
    """Set the fault the next engine process starts with."""
    return lambda plan: monkeypatch.setenv(FAULT_ENV, plan)


def _collect(records) -> list:
    return list(records)


def test_inspection_through_the_client_api(fault, monkeypatch, default_model_path):
    model = str(default_model_path)
    client = EngineClient(hang_timeout_s=HANG_S, load_timeout_s=LOAD_S)
    try:
        # killed while it produces the greedy answer: an error, no inspection
        fault("decode:kill:2")
        got = _collect(client.inspect_answer(PROMPT, GREEDY, LENS, model))
        assert [r.type for r in got if r.type != "progress"][-1] == "error"
        assert not any(r.type == "inspect" for r in got)
        assert got[-1].kind == "engine_died"
        assert got[-1].message.startswith("engine died during decode")
        assert "greedy answer" in got[-1].message

        # frozen in the forward pass: engine_hung within the deadline, no inspection
        fault("inspect:stop")
        started = time.monotonic()
        got = _collect(client.inspect_answer(PROMPT, GREEDY, LENS, model))
        assert got[-1].type == "error" and got[-1].kind == "engine_hung", got[-1]
        assert "the inspection's forward pass" in got[-1].message
        assert not any(r.type == "inspect" for r in got)
        assert time.monotonic() - started < LOAD_S  # the answer, then HANG_S of silence

        # the next inspection on the same client works (a fresh engine, no fault)
        monkeypatch.delenv(FAULT_ENV)
        got = _collect(client.inspect_answer(PROMPT, GREEDY, LENS, model))
        record = got[-1]
        assert record.type == "inspect" and record.step == 2
        assert len(record.data.rows) == record.layers > 0
        assert client.restarts == 2
    finally:
        client.close()


def _cli(*args: str, plan: str, timeout_s: float = 3.0) -> subprocess.CompletedProcess:
    env = {**os.environ, FAULT_ENV: plan, "LOGITSCOPE_ENGINE_TIMEOUT": str(timeout_s)}
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("plan", "what", "said"),
    [
        ("decode:kill:2", "lens", "engine died during decode"),
        ("inspect:stop", "attention", "engine hung during the inspection's forward pass"),
    ],
)
def test_cli_inspect_fault_exits_1_and_prints_no_numbers(plan, what, said, default_model_path):
    out = _cli(
        "inspect",
        "--prompt",
        PROMPT,
        "--model",
        str(default_model_path),
        "--raw",
        "--what",
        what,
        "--step",
        "3",
        "--json",
        plan=plan,
    )
    assert out.returncode == 1, out.stderr
    assert out.stdout == ""  # nothing printed as if it were a result
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], out.stderr
    assert "inspecting its end" not in out.stderr


def test_cli_inspect_without_a_fault_prints_the_step(default_model_path):
    out = _cli(
        "inspect",
        "--prompt",
        PROMPT,
        "--model",
        str(default_model_path),
        "--raw",
        "--what",
        "lens",
        "--step",
        "1",
        "--json",
        plan="",
    )
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["type"] == "inspect" and record["step"] == 1


def test_load_and_lab_faults_name_their_phase(fault, monkeypatch, default_model_path):
    model = str(default_model_path)
    client = EngineClient(hang_timeout_s=HANG_S, load_timeout_s=LOAD_S)
    try:
        fault("load:kill")  # the model picker's load
        got = _collect(client.load(model))
        assert got[-1].kind == "engine_died"
        assert got[-1].message.startswith("engine died during loading the model")

        fault("lab:stop")  # a lab experiment, frozen after its model loaded
        got = _collect(client.lab(QuantParams((4,), 2), PROMPT, GREEDY, model))
        assert got[-1].kind == "engine_hung" and "during the experiment" in got[-1].message
        assert not any(r.type == "lab" for r in got)

        monkeypatch.delenv(FAULT_ENV)
        got = _collect(client.load(model))
        assert got[-1].type == "model"
    finally:
        client.close()


def test_a_conversion_killed_midway_says_so_and_the_next_one_works(fault, monkeypatch, tmp_path):
    from tests.gguf_fixtures import write_tiny_gguf

    gguf = write_tiny_gguf(tmp_path / "tiny.gguf")
    monkeypatch.setenv("LOGITSCOPE_MODELS_DIR", str(tmp_path / "models"))  # not the shared one
    client = EngineClient(hang_timeout_s=HANG_S, load_timeout_s=LOAD_S)
    try:
        fault("progress:kill:2")  # during the GGUF conversion's progress
        got = _collect(client.load(str(gguf)))
        assert got[-1].kind == "engine_died"
        assert got[-1].message.startswith("engine died during loading the model (")
        monkeypatch.delenv(FAULT_ENV)
        got = _collect(client.load(str(gguf)))
        assert got[-1].type == "model", got[-1]
    finally:
        client.close()
