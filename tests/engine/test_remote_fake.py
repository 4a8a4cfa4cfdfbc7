"""The remote backend against a local fake server: llama.cpp's and vLLM's shapes,
HTTP errors, malformed, cut and stalled streams, cancel, and API keys."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.backends.base import normalize_base_url, open_backend
from engine.errors import ModelError, ServerError
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings
from tests.fake_server import (
    FakeServer,
    Script,
    finish_chunk,
    llama_chunk,
    llama_models,
    vllm_chunk,
    vllm_models,
)

GREEDY = SamplingSettings(temperature=0, max_tokens=8, seed=3, top_n=5)
TOP = [(" Paris", -0.1), (" Lyon", -2.5), (" the", -3.0)]


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def run(server, settings=GREEDY, model="", key=None, stop=lambda: False) -> RunResult:
    backend = open_backend("openai", api_key=key)
    result = RunResult()
    try:
        result.add(backend.load(f"{server.url}#{model}", lambda *a: None))
        for record in backend.generate("What is the capital of France?", settings, stop):
            result.add(record)
    finally:
        backend.close()
    return result


def entropy(logprobs) -> float:
    p = np.exp(np.array(logprobs) - np.max(logprobs))
    p /= p.sum()
    return float(-(p * np.log(p)).sum())


def test_vllm_shape(server):
    server.script = Script(
        models=vllm_models(4096),
        events=[
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ]
            },
            vllm_chunk(" Paris", -0.1, [(" Lyon", -2.5), (" Paris", -0.1), (" the", -3.0)]),
            vllm_chunk(".", -0.3, [(".", -0.3), ("!", -1.6)]),
            finish_chunk("stop"),
            {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}},
        ],
    )
    r = run(server)
    assert r.model.device.startswith("vLLM") and r.model.context_length == 4096
    assert r.model.can("entropy_top_k") and not r.model.can("entropy")
    assert [t.text for t in r.tokens] == [" Paris", "."]
    t = r.tokens[0]
    assert t.logprob == -0.1 and math.isclose(t.prob, math.exp(-0.1))
    assert [c.text for c in t.top] == [" Paris", " Lyon", " the"]  # sorted
    assert t.top[0].token_id == t.token_id < 0  # a stand-in id, the same for the same bytes
    assert math.isclose(t.entropy, entropy([-0.1, -2.5, -3.0]), rel_tol=1e-9)
    assert t.sampled_logprob is None and t.sampled_top == ()
    assert r.done.text == " Paris." and r.done.prompt_tokens == 12
    assert r.done.finish_reason == "eos" and r.done.prefill_tps is None
    assert r.done.timings_from == "client" and r.done.ttft_s > 0
    body = server.requests[-1]["body"]
    assert body["logprobs"] is True and body["top_logprobs"] == 5 and body["seed"] == 3


def test_llama_cpp_post_sampling_and_timings(server):
    server.script = Script(
        models=llama_models(),
        server_header="llama.cpp",
        props={"default_generation_settings": {"n_ctx": 4096}},
        events=[
            llama_chunk(6342, " Paris", 0.9, [(6342, " Paris", 0.9), (9, " Lyon", 0.1)], True),
            llama_chunk(30, ".", 1.0, [(30, ".", 1.0)], True),
            finish_chunk(
                "length",
                timings={
                    "prompt_n": 10,
                    "prompt_ms": 50.0,
                    "cache_n": 2,
                    "predicted_n": 2,
                    "predicted_ms": 40.0,
                },
            ),
        ],
    )
    settings = SamplingSettings(
        temperature=0.8, top_k=40, repetition_penalty=1.1, max_tokens=2, seed=1, top_n=5
    )
    r = run(server, settings)
    assert r.model.device.startswith("llama.cpp server") and r.model.context_length == 4096
    assert r.model.size_bytes == 98000000 and r.model.can("sampled_top")
    t = r.tokens[0]
    assert t.token_id == 6342 and t.logprob is None and t.top == ()  # raw: not reported
    assert math.isclose(t.sampled_logprob, math.log(0.9))
    assert [c.token_id for c in t.sampled_top] == [6342, 9]
    assert math.isclose(r.tokens[0].sampled_entropy, entropy(np.log([0.9, 0.1])))
    d = r.done
    assert d.timings_from == "server" and d.prompt_tokens == 12
    assert math.isclose(d.prefill_tps, 10 / 0.05) and math.isclose(d.decode_tps, 2 / 0.04)
    assert d.finish_reason == "length"
    body = server.requests[-1]["body"]
    assert body["post_sampling_probs"] is True and body["top_k"] == 40
    assert body["repeat_penalty"] == 1.1 and body["repetition_penalty"] == 1.1


def test_llama_cpp_raw_when_greedy(server):
    server.script = Script(
        models=llama_models(),
        server_header="llama.cpp",
        events=[
            llama_chunk(6342, " Paris", -0.1, [(6342, " Paris", -0.1), (9, " Lyon", -2.4)], False),
            finish_chunk("stop"),
        ],
    )
    r = run(server)
    t = r.tokens[0]
    assert t.token_id == 6342 and t.logprob == -0.1 and t.top[1].token_id == 9
    assert "post_sampling_probs" not in server.requests[-1]["body"]


def test_text_only_server_reports_no_logprobs(server):
    server.script = Script(
        models={"data": [{"id": "m"}]},
        events=[
            {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
            finish_chunk("stop"),
        ],
    )
    r = run(server)
    t = r.tokens[0]
    assert t.text == "Hi" and t.logprob is None and t.prob is None and t.top == ()
    assert t.entropy is None and t.sweep_logz == ()


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (401, '{"error": {"message": "Invalid API key"}}', ["401", "Invalid API key", "API key"]),
        (429, "slow down", ["429", "busy"]),
        (500, '{"error": "CUDA out of memory"}', ["500", "CUDA out of memory", "log"]),
    ],
)
def test_http_errors(server, status, body, words):
    server.script = Script(models=vllm_models(), status=status, error_body=body)
    with pytest.raises(ServerError) as e:
        run(server)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize(
    ("tail", "words"),
    [
        (["data: {not json"], ["malformed"]),
        (["CUT"], ["ended before"]),
        ([{"error": {"message": "the GPU fell over"}}], ["GPU fell over"]),
    ],
)
def test_broken_streams_keep_the_partial_answer(server, tail, words):
    server.script = Script(
        models=vllm_models(), done=False, events=[vllm_chunk(" Paris", -0.1, TOP), *tail]
    )
    r = run(server)
    assert r.done.finish_reason == "error" and r.done.text == " Paris"
    assert [t.text for t in r.tokens] == [" Paris"]
    for w in words:
        assert w in r.done.error


def test_stalled_stream_is_stopped(server, monkeypatch):
    monkeypatch.setenv("LOGITSCOPE_SERVER_TIMEOUT", "1")
    server.script = Script(
        models=vllm_models(), events=[vllm_chunk(" Paris", -0.1, TOP), ("sleep", 4)]
    )
    r = run(server)
    assert r.done.finish_reason == "error" and "no tokens for 1 s" in r.done.error
    assert r.done.text == " Paris"


def test_unreachable_server_and_unknown_model(server):
    backend = open_backend("openai")
    with pytest.raises(ServerError, match="cannot connect"):
        backend.load("http://127.0.0.1:9#m", lambda *a: None)
    backend.close()
    server.script = Script(models=vllm_models())
    with pytest.raises(ModelError, match="no model 'gpt-9'.*Qwen/Qwen3-0.6B"):
        run(server, model="gpt-9")
    with pytest.raises(ModelError, match="not an http"):
        normalize_base_url("ftp://example.com")
    assert normalize_base_url("localhost:8080") == "http://localhost:8080/v1"
    assert normalize_base_url("https://h/api/v1/") == "https://h/api/v1"


def test_cancel_closes_the_stream_through_the_engine(server, engine_client):
    events = [vllm_chunk(" a", -0.1, TOP), ("sleep", 0.2)] * 60
    server.script = Script(models=vllm_models(), events=events)
    result, spec = RunResult(), f"{server.url}#"
    for record in engine_client.generate("hi", GREEDY, spec, api_key="sk-test-123"):
        result.add(record)
        if len(result.tokens) == 2:
            engine_client.cancel()
    assert result.done.finish_reason == "cancelled" and 2 <= len(result.tokens) < 10
    assert server.client_gone.wait(5)  # the connection was closed: the server stops too
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-test-123"


def test_api_key_is_never_recorded(server, monkeypatch, private_data_dir, capsys):
    from engine.cli import main

    server.script = Script(
        models=vllm_models(), events=[vllm_chunk(" Paris", -0.1, TOP), finish_chunk()]
    )
    monkeypatch.setenv("MY_KEY", "sk-secret-987")
    assert (
        main(
            [
                "generate",
                "--endpoint",
                server.url,
                "--api-key-env",
                "MY_KEY",
                "--prompt",
                "hi",
                "--temp",
                "0",
                "--json",
            ]
        )
        == 0
    )
    assert "sk-secret-987" not in capsys.readouterr().out
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-secret-987"
    for f in private_data_dir.rglob("*"):
        if f.is_file():
            assert b"sk-secret-987" not in f.read_bytes(), f
    assert (
        main(
            ["generate", "--endpoint", server.url, "--api-key-env", "UNSET_VAR_X", "--prompt", "hi"]
        )
        == 2
    )


def test_mlx_lm_alignment_backs_up_over_ambiguous_prefixes():
    """mlx_lm.server's top lists are unsorted and the outer entry is not the generated
    token: the generated one is the candidate that lets the rest of the answer fit."""
    from engine.backends.openai.shapes import align_mlx_lm

    def entry(*cands):  # mlx_lm.server's shape: raw vocabulary strings, ids, unsorted
        top = [{"id": i, "token": t, "logprob": lp} for i, t, lp in cands]
        return {**top[0], "top_logprobs": top}

    content = [
        entry((1, "ĠPar", -0.5), (2, "ĠParis", -1.0)),  # " Par" is likelier but a dead end
        entry((3, "is", -2.0), (4, ".", -0.1)),
        entry((9, "<|im_end|>", -0.01), (5, "Ġok", -3.0)),
    ]
    infos = align_mlx_lm(content, " Paris.", eos_stop=True, greedy=True)
    assert [i.token_id for i in infos] == [2, 4, 9]
    assert [i.text for i in infos] == [" Paris", ".", ""]
    assert infos[0].top[0].text == " Par" and infos[0].logprob == -1.0
    assert align_mlx_lm(content, " London.", eos_stop=True, greedy=True) is None


def test_remote_runs_journal_and_export_without_inventing_numbers(server, tmp_path):
    """A text-only server's run and an mlx_lm-style re-sent run go through the journal
    and every export format: unknowns stay empty / 'not reported', never 0."""
    from engine.sessions.export import FORMATS, render
    from engine.sessions.journal import Journal, read_session

    server.script = Script(
        models={"data": [{"id": "m"}]},
        events=[
            {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
            finish_chunk("stop"),
        ],
    )
    backend = open_backend("openai")
    journal = Journal.create(tmp_path)
    run_id = journal.start_run("hello", GREEDY.to_dict(), None)
    try:
        journal.record(run_id, backend.load(f"{server.url}#m", lambda *a: None))
        for record in backend.generate("hello", GREEDY, lambda: False):
            journal.record(run_id, record)
    finally:
        backend.close()
        journal.close()
    session = read_session(journal.path)
    run = session.runs[0]
    assert run.tokens[0].prob is None and run.done.prompt_tokens is None
    assert run.model_record.backend == "openai" and run.model_record.context_length is None
    for fmt in FORMATS:
        text = render(fmt, session, [run])
        assert "Hi" in text
    csv_row = render("csv", session, [run]).splitlines()[1].split(",")
    assert csv_row[6:11] == ["", "", "", "", ""]  # probability .. sampled_entropy: unknown
    assert "not reported" in render("html", session, [run])


def test_stand_in_ids_survive_the_journal(server, tmp_path):
    from engine.sessions.journal import Journal, read_session

    server.script = Script(
        models=vllm_models(), events=[vllm_chunk(" Paris", -0.1, TOP), finish_chunk()]
    )
    r = run(server)
    journal = Journal.create(tmp_path)
    run_id = journal.start_run("q", GREEDY.to_dict(), None)
    for record in (r.model, *r.tokens, r.done):
        journal.record(run_id, record)
    journal.close()
    back = read_session(journal.path).runs[0]
    assert back.tokens == r.tokens and back.tokens[0].top[0].token_id < 0


def test_legacy_completions_logprobs_in_raw_mode(server):
    server.script = Script(
        models=vllm_models(),
        events=[
            {
                "choices": [
                    {
                        "index": 0,
                        "text": " Paris",
                        "finish_reason": None,
                        "logprobs": {
                            "tokens": [" Paris"],
                            "token_logprobs": [-0.2],
                            "top_logprobs": [{" Paris": -0.2, " Lyon": -1.9}],
                        },
                    }
                ]
            },
            finish_chunk("length"),
        ],
    )
    r = run(server, SamplingSettings(temperature=0, max_tokens=1, chat_template=False, top_n=5))
    assert server.requests[-1]["path"].endswith("/v1/completions")
    assert server.requests[-1]["body"]["logprobs"] == 5 and "prompt" in server.requests[-1]["body"]
    t = r.tokens[0]
    assert (
        t.text == " Paris" and t.logprob == -0.2 and [c.text for c in t.top] == [" Paris", " Lyon"]
    )
