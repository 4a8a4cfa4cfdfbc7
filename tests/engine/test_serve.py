"""`logitscope serve` against real clients: the official `openai` client (chat and
completions, streamed and not, with logprobs) and Logitscope's own remote backend,
whose greedy tokens and log-probabilities must equal the local engine's."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

from engine.backends.mlx.generate import generate_records
from engine.backends.openai.backend import OpenAIBackend
from engine.run.settings import SamplingSettings
from engine.serve.server import ServeOptions, start
from engine.sessions.journal import read_session


@pytest.fixture(scope="module")
def server(default_model_path):
    handle = start(ServeOptions(model=str(default_model_path), port=0, max_batch=4, max_queue=4))
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)


def _model(client) -> str:
    (m,) = client.models.list().data
    return m.id


def _local(server, prompt, settings) -> list:
    """The local engine's token records for the same prompt, once the server is idle: a
    client has its answer before the server's runner has ended the request (the prompt
    cache it stores on the shared model comes after the last record), so wait for that,
    and compute under the server's own compute lock."""
    scheduler = server.served.scheduler
    deadline = time.monotonic() + 30
    while (scheduler.running or scheduler.waiting) and time.monotonic() < deadline:
        time.sleep(0.01)
    with scheduler.compute:
        records = list(generate_records(scheduler.lm, prompt, settings))
    return [r for r in records if r.type == "token" and not r.eos]


def test_openai_chat_not_streamed_matches_local_engine(server, client):
    msgs = [{"role": "user", "content": "Name a colour."}]
    r = client.chat.completions.create(
        model=_model(client), messages=msgs, max_tokens=4, temperature=0,
        logprobs=True, top_logprobs=3,
    )  # fmt: skip
    local = _local(server, msgs, SamplingSettings(temperature=0, max_tokens=4))
    content = r.choices[0].logprobs.content
    assert r.choices[0].message.content == "".join(t.text for t in local)
    assert [e.token for e in content] == [t.text for t in local]
    for e, t in zip(content, local, strict=True):
        assert abs(e.logprob - t.logprob) < 1e-5
        assert len(e.top_logprobs) == 3
        assert [c.id for c in e.top_logprobs] == [c.token_id for c in t.top[:3]]
        assert e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 4
    assert r.usage.prompt_tokens > 10 and r.usage.prompt_tokens_details.cached_tokens >= 0


def test_openai_chat_streamed_logprobs_on_every_chunk(client):
    stream = client.chat.completions.create(
        model=_model(client), messages=[{"role": "user", "content": "Say hi"}], max_tokens=3,
        temperature=0, logprobs=True, top_logprobs=2, stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(stream)
    tokens = [c for c in chunks if c.choices and c.choices[0].logprobs]
    assert len(tokens) == 3
    for c in tokens:
        (entry,) = c.choices[0].logprobs.content
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 2
        assert bytes(entry.bytes).decode() == entry.token
    assert chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].usage.completion_tokens == 3
    # the same conversation again: its prompt comes from the KV cache
    again = client.chat.completions.create(
        model=_model(client), messages=[{"role": "user", "content": "Say hi"}], max_tokens=1,
        temperature=0,
    )  # fmt: skip
    assert again.usage.prompt_tokens_details.cached_tokens == again.usage.prompt_tokens - 1


def test_openai_completions_streamed_and_not(client):
    kw = dict(model=_model(client), prompt="The capital of France is", max_tokens=3, temperature=0)
    r = client.completions.create(**kw, logprobs=2)
    lp = r.choices[0].logprobs
    assert "".join(lp.tokens) == r.choices[0].text and len(lp.tokens) == 3
    assert all(len(t) == 2 for t in lp.top_logprobs)
    assert lp.text_offset[0] == 0
    streamed = list(client.completions.create(**kw, logprobs=2, stream=True))
    text = "".join(c.choices[0].text for c in streamed if c.choices)
    assert text == r.choices[0].text
    got = [c.choices[0].logprobs.token_logprobs[0] for c in streamed if c.choices[0].logprobs]
    assert got == pytest.approx(lp.token_logprobs, abs=1e-6)


def test_stop_string_never_reaches_the_client(client):
    kw = dict(model=_model(client), prompt="1, 2, 3, 4, 5,", max_tokens=12, temperature=0)
    full = client.completions.create(**kw).choices[0].text
    assert " 7" in full
    r = client.completions.create(**kw, stop=[" 7"])
    assert r.choices[0].finish_reason == "stop" and r.choices[0].text == full[: full.index(" 7")]
    streamed = "".join(
        c.choices[0].text for c in client.completions.create(**kw, stop=[" 7"], stream=True)
    )
    assert streamed == r.choices[0].text


@pytest.fixture(scope="module")
def serial_server(default_model_path):
    """`--batch 1`: every request on the path `logitscope generate` takes."""
    handle = start(ServeOptions(model=str(default_model_path), port=0, max_batch=1, max_queue=4))
    yield handle
    handle.stop()


@pytest.mark.real_model  # its server is a fixture fetched by name: not seen at collection
@pytest.mark.parametrize(
    ("which", "tol"),
    [
        # The same compute path, but the prompt's prefill is cut into chunks sized by the
        # speed each side measured on its last run: on a loaded machine (3 workers beside
        # a CPU hog) the two sides cut it differently and float32 sums moved a top
        # log-probability past 1e-5.
        ("serial_server", 1e-4),
        ("server", 1e-4),  # a batched forward pass rounds a little differently (~2e-5)
    ],
)
def test_remote_backend_matches_local_engine(request, which, tol):
    server = request.getfixturevalue(which)
    backend = OpenAIBackend()
    request.addfinalizer(backend.close)  # its connection pool: never left to the GC
    backend.load(f"{server.url}#", lambda m, f: None)
    for settings in (
        SamplingSettings(temperature=0, max_tokens=5, top_n=5),
        SamplingSettings(temperature=0.9, max_tokens=5, top_n=5, seed=11),
    ):
        remote = [r for r in backend.generate("Name a fruit.", settings, lambda: False)]
        remote_tokens = [r for r in remote if r.type == "token"]
        local = _local(server, "Name a fruit.", settings)
        assert [t.token_id for t in remote_tokens] == [t.token_id for t in local]
        for a, b in zip(remote_tokens, local, strict=True):
            assert abs(a.logprob - b.logprob) < tol
            assert [c.token_id for c in a.top] == [c.token_id for c in b.top]
            gaps = [abs(c.logprob - d.logprob) for c, d in zip(a.top, b.top, strict=True)]
            assert max(gaps) < tol, gaps
        assert remote[-1].type == "done" and remote[-1].finish_reason == "length"
    backend.close()


def test_every_request_is_a_run_in_the_journal(server, client):
    r = client.chat.completions.create(
        model=_model(client), messages=[{"role": "user", "content": "Name a planet."}],
        max_tokens=2, temperature=0,
    )  # fmt: skip
    session = read_session(server.journal.path)
    run = [x for x in session.runs if x.prompt == "Name a planet."][-1]
    assert "".join(t.text for t in run.tokens) == r.choices[0].message.content
    assert len(run.tokens) == 2
    assert run.done.finish_reason == "length"
    raw = server.journal.path.read_text()
    assert '"user_agent": "OpenAI/Python' in raw and '"client": "127.0.0.1:' in raw
    assert "unused" not in raw  # the API key the client sent is never written


@pytest.mark.parametrize(
    "body, status, param",
    [
        (
            {"messages": [{"role": "user", "content": "hi"}], "temperature": float("nan")},
            400,
            "temperature",
        ),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}, 400, "max_tokens"),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": "3"}, 400, "max_tokens"),
        ({"messages": "hi"}, 400, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4"}, 404, "model"),
        ({"messages": [{"role": "user", "content": "x " * 9000}]}, 400, "messages"),
        ({"prompt": 3}, 400, "prompt"),
    ],
)
def test_bad_requests_get_one_clear_error(server, body, status, param):
    route = "/completions" if "prompt" in body else "/chat/completions"
    import json as _json

    data = _json.dumps(body, allow_nan=True)
    r = httpx.post(server.url + route, content=data, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["param"] == param and err["message"] and "Traceback" not in r.text
    if param == "messages" and "x x" in data:
        assert "tokens but this model's context window is" in err["message"]


def test_big_bodies_and_unknown_routes(server):
    r = httpx.post(server.url + "/chat/completions", content=b"{" + b" " * (10 << 20) + b"}")
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    r = httpx.post(server.url + "/chat/completions", content=b"{not json")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    assert httpx.get(server.url + "/nothing").status_code == 404
    assert httpx.get(server.url + "/chat/completions").status_code == 405
    assert (
        "access-control-allow-origin"
        not in httpx.get(server.url + "/models", headers={"origin": "http://evil.example"}).headers
    )
