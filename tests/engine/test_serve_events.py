"""`GET /logitscope/events`: a follower sees each request start, every token record the
client received (the same tokens and log-probabilities) and its end; the feed asks for
the API key like every route; a slow follower is dropped, never waited for."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import openai
import pytest
from starlette.testclient import TestClient

from engine.backends.openai.sse_events import iter_events
from engine.run.records import record_from_dict
from engine.serve.app import ServeState, make_app
from engine.serve.events import ClientInfo, RequestEvent
from engine.serve.events_feed import EventsFeed, Subscriber, event_dict
from engine.serve.server import ServeOptions, start


@pytest.fixture(scope="module")
def server(default_model_path):
    handle = start(ServeOptions(model=str(default_model_path), port=0, max_batch=2, max_queue=2))
    yield handle
    handle.stop()


def _follow(url: str, out: list, subscribed: threading.Event, until: str = "ended") -> None:
    """Read the feed into `out` until the first `until` event."""
    with httpx.stream("GET", url, timeout=httpx.Timeout(60, connect=5)) as r:
        assert r.status_code == 200
        for e in iter_events(r.iter_bytes(), 1 << 20):
            data = json.loads(e.data)
            assert data["kind"] == e.event
            out.append(data)
            if data["kind"] == "subscribed":
                subscribed.set()
            if data["kind"] == until:
                return


def test_follower_sees_the_request_and_every_token_the_client_got(server):
    events, subscribed = [], threading.Event()
    feed_url = server.url.removesuffix("/v1") + "/logitscope/events"
    reader = threading.Thread(target=_follow, args=(feed_url, events, subscribed))
    reader.start()
    assert subscribed.wait(30)
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)
    msgs = [{"role": "user", "content": "Say hi"}]
    stream = client.chat.completions.create(
        model=server.served.record.name, messages=msgs, max_tokens=3, temperature=0,
        logprobs=True, top_logprobs=2, stream=True,
    )  # fmt: skip
    got = [e for c in stream if c.choices and c.choices[0].logprobs
           for e in c.choices[0].logprobs.content]  # fmt: skip
    reader.join(60)
    assert not reader.is_alive()

    hello, started, *middle, ended = events
    assert hello["model"] == server.served.record.name and hello["context_length"] > 0
    assert started["kind"] == "started" and started["prompt"] == msgs
    assert started["settings"]["max_tokens"] == 3 and started["settings"]["temperature"] == 0
    assert started["client"]["address"].startswith("127.0.0.1:")
    assert started["client"]["user_agent"].startswith("OpenAI/Python")
    assert started["client"]["route"] == "/v1/chat/completions"
    assert started["run_id"] and started["model"]["name"] == server.served.record.name
    records = [record_from_dict(e["record"]) for e in middle]
    assert {e["run_id"] for e in middle} == {started["run_id"]}
    tokens = [r for r in records if r.type == "token" and not r.eos]
    assert [t.text for t in tokens] == [e.token for e in got]
    for t, e in zip(tokens, got, strict=True):
        assert abs(t.logprob - e.logprob) < 1e-5
        assert t.token_id == e.id
    assert records[-1].type == "done" and records[-1].generated_tokens == 3
    assert ended["kind"] == "ended" and ended["outcome"] == "done"
    assert ended["record"]["text"] == "".join(e.token for e in got)
    assert ended["record"]["finish_reason"] == records[-1].finish_reason


def _offline_app(api_key=None):
    """The app over a scheduler that never runs (routes that need no model)."""
    state = ServeState("m", 128, None, scheduler=object(), api_key=api_key)
    return make_app(state)


def test_the_feed_needs_the_api_key_when_the_server_has_one():
    with TestClient(_offline_app(api_key="sekret")) as tc:
        r = tc.get("/logitscope/events")
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "invalid_api_key"
        r = tc.get("/logitscope/events", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401


def test_a_slow_follower_is_dropped_not_waited_for():
    async def main():
        s = Subscriber(asyncio.get_running_loop(), limit=2)
        s.offer("a")
        s.offer("b")
        assert await s.next() == "a"
        s.offer("c")
        s.offer("d")  # three behind with room for two: dropped, the rest discarded
        assert s.dropped and await s.next() is None
        s.offer("e")  # nothing is queued for a dropped follower
        assert not s.items

    asyncio.run(main())


def test_only_this_servers_events_are_fed():
    """Listeners are process-wide: an event from another thread (another server) is not
    this feed's; one from its model thread is, and the end carries the done record."""
    model_thread = threading.Thread(target=lambda: None)

    class Sched:
        _thread = model_thread

    feed, seen = EventsFeed(Sched()), []

    class Sink:
        def offer(self, item):
            seen.append(item)

    feed.subscribers.append(Sink())
    started = RequestEvent("started", "r1", "run1", "hi", None, ClientInfo("a:1", "ua", "/x"))
    feed._on_event(started)  # the test's thread is not the model thread
    assert seen == []
    model_thread.run = lambda: feed._on_event(started)
    model_thread.start()
    model_thread.join()
    assert seen == [started]
    d = event_dict(started)
    assert d["prompt"] == "hi" and d["client"] == {
        "address": "a:1",
        "user_agent": "ua",
        "route": "/x",
    }
