"""Integration: the real default model, in-process and through the engine process."""

from __future__ import annotations

import os
import signal
import threading

import pytest
from mlx_lm import stream_generate

from engine.backends.mlx.generate import generate_records
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings

QUESTION = "What is the capital of France?"


def collect(records) -> RunResult:
    result = RunResult()
    for r in records:
        result.add(r)
    return result


def test_greedy_answer_names_paris(smollm):
    r = collect(generate_records(smollm, QUESTION, SamplingSettings(temperature=0, max_tokens=24)))
    assert "Paris" in r.done.text
    assert r.done.text.rstrip().endswith(".")
    assert r.done.finish_reason == "eos" and r.tokens[-1].eos


def test_chosen_logprobs_equal_bare_mlx_lm(smollm):
    settings = SamplingSettings(temperature=0, max_tokens=16)
    ours = collect(generate_records(smollm, "Name three colours.", settings)).tokens
    prompt = smollm.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Name three colours."}],
        add_generation_prompt=True,
        tokenize=False,
    )
    bare = list(stream_generate(smollm.model, smollm.tokenizer, prompt, max_tokens=16))
    assert [t.token_id for t in ours] == [b.token for b in bare]
    for t, b in zip(ours, bare, strict=True):
        assert t.logprob == pytest.approx(b.logprobs[b.token].item(), abs=1e-4)
        assert t.top[0].logprob == pytest.approx(b.logprobs.max().item(), abs=1e-4)


def test_engine_process_survives_kill_9(engine_client, default_model_path):
    settings = SamplingSettings(temperature=0, max_tokens=200)
    model = str(default_model_path)
    first = RunResult()
    pid_holder = []
    for rec in engine_client.generate("Tell me a long story about a cat.", settings, model):
        first.add(rec)
        if rec.type == "token" and len(first.tokens) == 3:
            pid_holder.append(engine_client.pid)
            os.kill(engine_client.pid, signal.SIGKILL)
    assert first.error is not None and first.error.kind == "engine_died"
    assert "killed by signal 9" in first.error.message
    assert first.done is None
    assert 3 <= len(first.tokens) < 200  # partial output kept by the caller
    again = collect(engine_client.generate(QUESTION, settings.with_(max_tokens=24), model))
    assert "Paris" in again.done.text
    assert engine_client.pid != pid_holder[0]


def test_cancel_through_the_engine_process(engine_client, default_model_path):
    settings = SamplingSettings(temperature=0, max_tokens=200)
    result = RunResult()
    cancelled = False
    for rec in engine_client.generate(
        "Count from one to one hundred.", settings, str(default_model_path)
    ):
        result.add(rec)
        if rec.type == "token" and len(result.tokens) == 4 and not cancelled:
            cancelled = True
            threading.Thread(target=engine_client.cancel).start()
    assert result.done.finish_reason == "cancelled"
    # Cancelling is checked between tokens: it lands within two steps (counted, not timed).
    assert 4 <= result.done.generated_tokens <= 6
    assert result.done.text == result.text
