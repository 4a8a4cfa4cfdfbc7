"""`logitscope serve` under load: 20 concurrent streaming clients against a small
batch and queue (each ends with its full answer or a 429), a client that leaves
mid-stream (its run cancelled, the server serving on), and the live request
events a window follows."""

from __future__ import annotations

import concurrent.futures as cf
import json
import time

import httpx
import pytest

from engine.serve import events
from engine.serve.server import ServeOptions, start
from engine.sessions.journal import read_session

TOKENS = 3


@pytest.fixture(scope="module")
def server(default_model_path):
    handle = start(ServeOptions(model=str(default_model_path), port=0, max_batch=4, max_queue=2))
    yield handle
    handle.stop()


def _stream(url: str, prompt: str) -> tuple[int, str, int, dict]:
    """(status, text, logprob entries, headers) of one streamed chat request."""
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": TOKENS,
        "temperature": 0,
        "logprobs": True,
        "stream": True,
    }
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=120) as r:
        if r.status_code != 200:
            r.read()
            return r.status_code, "", 0, dict(r.headers)
        text, n, done = "", 0, False
        for line in r.iter_lines():
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                c = json.loads(line[6:])["choices"][0]
                text += c["delta"].get("content") or ""
                n += len(c["logprobs"]["content"]) if c["logprobs"] else 0
        assert done
        return 200, text, n, {}


def test_twenty_clients_end_with_an_answer_or_429(server):
    prompts = [f"Count to {i}." for i in range(20)]
    with cf.ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda p: _stream(server.url, p), prompts))
    answered = [(p, r) for p, r in zip(prompts, results, strict=True) if r[0] == 200]
    refused = [r for r in results if r[0] == 429]
    assert len(answered) + len(refused) == 20
    assert refused and len(answered) >= 6  # 4 in the batch and 2 queued at least
    assert all(int(r[3]["retry-after"]) >= 1 for r in refused)
    assert all(r[2] == TOKENS for _, r in answered)
    runs = {r.prompt: r for r in read_session(server.journal.path).runs}
    for prompt, (_, text, _, _) in answered:
        run = runs[prompt]
        assert len(run.tokens) == TOKENS and "".join(t.text for t in run.tokens) == text
        assert run.done.finish_reason == "length"
    assert not any(p in runs for p, r in zip(prompts, results, strict=True) if r[0] == 429)


def _done_of(server, prompt: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = [r for r in read_session(server.journal.path).runs if r.prompt == prompt]
        if runs and runs[-1].done is not None:
            return runs[-1]
        time.sleep(0.2)
    raise AssertionError(f"no ended run for {prompt!r}")


def test_a_client_that_leaves_cancels_its_run(server):
    body = {
        "messages": [{"role": "user", "content": "Write a long story."}],
        "max_tokens": 400,
        "temperature": 0,
        "stream": True,
    }
    with httpx.stream("POST", f"{server.url}/chat/completions", json=body, timeout=60) as r:
        lines = r.iter_lines()
        seen = [line for line, _ in zip(lines, range(6), strict=False) if line.startswith("data")]
    assert len(seen) >= 2
    run = _done_of(server, "Write a long story.")
    assert run.done.finish_reason == "cancelled"
    assert 1 <= len(run.tokens) < 400
    status, text, n, _ = _stream(server.url, "Say hi")  # still serving
    assert status == 200 and n == TOKENS and text


def test_live_events_follow_each_request(server):
    seen: list[events.RequestEvent] = []
    events.add_listener(seen.append)
    try:
        status, text, n, _ = _stream(server.url, "Name a fruit.")
    finally:
        events.remove_listener(seen.append)
    mine = [e for e in seen if e.request_id == seen[0].request_id]
    assert mine[0].kind == "started" and mine[0].client.address.startswith("127.0.0.1:")
    assert mine[0].prompt == [{"role": "user", "content": "Name a fruit."}]
    assert mine[0].settings.max_tokens == TOKENS and mine[0].run_id
    tokens = [e.record for e in mine if e.kind == "record" and e.record.type == "token"]
    assert "".join(t.text for t in tokens) == text and len(tokens) == n
    assert mine[-2].record.type == "done" and mine[-1].kind == "ended"
    assert mine[-1].outcome == "done"
