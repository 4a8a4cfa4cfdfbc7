"""`logitscope serve --route SMALL,LARGE --escalate-below SIGNAL=VALUE` against the
official `openai` client: the small model's answer when it is confident, the large
model's when it is not, each the engine's own greedy text on that model; a large model
that fails leaves the small answer; both runs journaled and linked; bad settings one
sentence and exit 2 before any model loads."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import openai
import pytest

from engine.backends.mlx.generate import generate_records
from engine.errors import SettingsError
from engine.lab.routing import run_signal as answer_signal  # what serve --route decides on
from engine.run.records import TokenRecord
from engine.run.settings import SamplingSettings
from engine.serve.scheduler import QueueFull
from engine.serve.server import ServeOptions, check_options, start
from engine.sessions.journal import read_session

MSGS = [{"role": "user", "content": "What is the capital of France?"}]
N = 6  # tokens per answer
SIGNAL, BELOW = "mean_prob", 0.05  # a low bar the small model's answer clears (checked)


@pytest.fixture(scope="module")
def server(default_model_path, gemma_path):
    handle = start(
        ServeOptions(
            route=(str(default_model_path), str(gemma_path)),
            escalate_below=(SIGNAL, BELOW),
            port=0,
            max_batch=2,
            max_queue=4,
        )
    )
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)


@pytest.fixture
def route(server):
    """The server's route, its threshold restored after a test changes it."""
    r = server.served.app.state.serve.route
    saved = r.signal, r.threshold, r.scheduler
    yield r
    r.signal, r.threshold, r.scheduler = saved


def _greedy(lm) -> list:
    """The engine's own greedy answer's token records on `lm` (the server is idle)."""
    settings = SamplingSettings(temperature=0, max_tokens=N)
    return [r for r in generate_records(lm, MSGS, settings) if r.type == "token" and not r.eos]


def _ask(client, **kw):
    """The request, naming the small model (either served name is routed alike)."""
    return client.chat.completions.create(
        model=_names(client)[0], messages=MSGS, max_tokens=N, temperature=0, **kw
    )


def _names(client) -> list[str]:
    return [m.id for m in client.models.list().data]


def test_a_confident_small_model_answers(server, client):
    small_name, large_name = _names(client)
    local = _greedy(server.served.scheduler.lm)
    r = client.chat.completions.create(model=small_name, messages=MSGS, max_tokens=N, temperature=0)
    assert r.model == small_name != large_name
    assert r.choices[0].message.content == "".join(t.text for t in local)
    ext = r.model_extra["logitscope"]
    mean = sum(math.exp(t.logprob) for t in local) / len(local)
    assert ext["value"] == pytest.approx(mean, abs=1e-5) and mean >= BELOW
    assert ext["routed"] == "small" and ext["escalated"] is False
    assert ext["reason"].startswith("mean token p ") and ext["reason"].endswith(": kept")
    assert ext["small_run"] and ext["large_run"] is None


def test_below_the_threshold_the_large_model_answers(server, client, route):
    # as `--escalate-below min_prob=1.0`: no answer's least token probability is above 1
    route.signal, route.threshold = "min_prob", 1.0
    small_name, large_name = _names(client)
    local = _greedy(server.served.large.lm)
    small_local = _greedy(server.served.scheduler.lm)
    assert "".join(t.text for t in local) != "".join(t.text for t in small_local)
    r = _ask(client)
    assert r.model == large_name
    assert r.choices[0].message.content == "".join(t.text for t in local)
    ext = r.model_extra["logitscope"]
    least = min(math.exp(t.logprob) for t in small_local)
    assert ext["value"] == pytest.approx(least, abs=1e-5)
    assert ext["routed"] == "large" and ext["escalated"] is True
    assert ext["reason"] == f"min token p {least:.2f} < 1.00: escalated"
    # streamed: the same decided answer, every chunk naming the large model
    chunks = list(_ask(client, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        r.choices[0].message.content
    )
    assert {c.model for c in chunks} == {large_name}
    assert chunks[-1].model_extra["logitscope"]["routed"] == "large"
    # both attempts are runs of the server's session, the large one naming the small one
    runs = {x.run_id: x for x in read_session(server.journal.path).runs}
    small_run, large_run = runs[ext["small_run"]], runs[ext["large_run"]]
    assert small_run.name == f"routed: {ext['reason']}"
    assert large_run.name == f"escalated from {ext['small_run']}: min token p {least:.2f} < 1.00"
    entries = [json.loads(line) for line in server.journal.path.read_text().splitlines()]
    served = {e["run_id"]: e["settings"]["server"] for e in entries if e.get("kind") == "run"}
    small_served, large_served = served[ext["small_run"]], served[ext["large_run"]]
    assert small_served["request_id"] == large_served["request_id"] == r.id.split("-", 1)[1]
    assert small_run.model["name"] == small_name and large_run.model["name"] == large_name


def _follow_runs(url: str, out: list, subscribed: threading.Event, runs: int) -> None:
    """Read the feed into `out` until `runs` runs have ended."""
    import httpx

    from engine.backends.openai.sse_events import iter_events

    with httpx.stream("GET", url, timeout=httpx.Timeout(60, connect=5)) as r:
        for e in iter_events(r.iter_bytes(), 1 << 20):
            out.append(json.loads(e.data))
            subscribed.set()
            if sum(x["kind"] == "ended" for x in out) == runs:
                return


def test_a_follower_sees_both_attempts_of_an_escalated_request(server, client, route):
    route.signal, route.threshold = "min_prob", 1.0
    small_name, large_name = _names(client)
    events, subscribed = [], threading.Event()
    feed_url = server.url.removesuffix("/v1") + "/logitscope/events"
    reader = threading.Thread(target=_follow_runs, args=(feed_url, events, subscribed, 2))
    reader.start()
    assert subscribed.wait(30)
    r = _ask(client)
    reader.join(60)
    assert not reader.is_alive()
    ext = r.model_extra["logitscope"]
    started = [e for e in events if e["kind"] == "started"]
    ended = [e for e in events if e["kind"] == "ended"]
    # both attempts, one after the other, under the request's id, each its own run
    assert [e["run_id"] for e in started] == [ext["small_run"], ext["large_run"]]
    assert [e["model"]["name"] for e in started] == [small_name, large_name]
    assert {e["request_id"] for e in started + ended} == {r.id.split("-", 1)[1]}
    assert [e["run_id"] for e in ended] == [ext["small_run"], ext["large_run"]]
    assert ended[1]["record"]["text"] == r.choices[0].message.content  # each run its own end
    large_tokens = [
        e["record"]["text"]
        for e in events
        if e["kind"] == "record"
        and e["run_id"] == ext["large_run"]
        and e["record"]["type"] == "token"
    ]
    assert "".join(large_tokens) == r.choices[0].message.content


class _Watching:
    """The route's shared compute lock, noting which threads held it and whether two
    ever held it at once (a plain lock underneath: it cannot, which is the point)."""

    def __init__(self):
        self.lock, self.held, self.threads, self.overlaps = threading.Lock(), 0, set(), 0
        self.guard = threading.Lock()

    def __enter__(self):
        self.lock.acquire()
        with self.guard:
            self.held += 1
            self.overlaps += self.held > 1
            self.threads.add(threading.get_ident())

    def __exit__(self, *exc):
        with self.guard:
            self.held -= 1
        self.lock.release()


def test_overlapping_routed_requests_never_compute_on_both_models_at_once(server, client, route):
    # every request escalates; three at once keep the small model answering the next
    # request while the large one answers the first: both schedulers take the one lock
    route.signal, route.threshold = "min_prob", 1.0
    large_text = "".join(t.text for t in _greedy(server.served.large.lm))
    watching = _Watching()
    small, large = server.served.scheduler, route.scheduler
    saved = small.compute, large.compute
    small.compute = large.compute = watching
    try:
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _i: _ask(client), range(3)))
    finally:
        small.compute, large.compute = saved
    assert [a.choices[0].message.content for a in answers] == [large_text] * 3
    assert len(watching.threads) == 2 and watching.overlaps == 0
    assert small.compute is large.compute  # the server gives both the same lock


class _Full:
    """A large model's scheduler whose queue is always full."""

    def submit(self, job):
        raise QueueFull(retry_after=1)


def test_a_failing_large_model_leaves_the_small_answer(server, client, route):
    route.signal, route.threshold, route.scheduler = "min_prob", 1.0, _Full()
    small_name = _names(client)[0]
    local = _greedy(server.served.scheduler.lm)
    r = _ask(client)
    assert r.model == small_name
    assert r.choices[0].message.content == "".join(t.text for t in local)
    ext = r.model_extra["logitscope"]
    assert ext["routed"] == "small" and ext["escalated"] is False and ext["large_run"] is None
    assert "< 1.00: the large model failed (the server is busy" in ext["reason"]
    assert ext["reason"].endswith(": kept")


def test_answer_signal_from_token_logprobs():
    def tok(step, p, eos=False, entropy=None, thinking=False):
        lp = math.log(p)
        return TokenRecord(
            step, 5, "a", lp, p, lp, (), (), entropy, None, 0.0, 0.0, step + 1,
            eos=eos, thinking=thinking,
        )  # fmt: skip

    ps = [0.5, 0.9, 0.1]
    records = [
        tok(0, 0.3, thinking=True),  # reasoning: not the answer
        *(tok(i + 1, p, entropy=1.25 if i == 0 else 0.5) for i, p in enumerate(ps)),
        tok(4, 0.001, eos=True),  # the end-of-sequence step: the client never sees it
    ]
    a = np.array(ps)
    assert answer_signal("min_prob", records) == pytest.approx(a.min())
    assert answer_signal("mean_prob", records) == pytest.approx(a.mean())
    assert answer_signal("geo_mean_prob", records) == pytest.approx(np.exp(np.log(a).mean()))
    assert answer_signal("first_prob", records) == pytest.approx(0.5)
    assert answer_signal("first_entropy", records) == pytest.approx(-1.25)
    assert answer_signal("min_prob", [records[-1]]) is None
    with pytest.raises(SettingsError, match="a live cascade decides on mean_prob"):
        answer_signal("p_true", records)


@pytest.mark.parametrize(
    "route, below, words",
    [
        (("only-one",), ("min_prob", 0.2), "--route takes two models, SMALL,LARGE"),
        (("a", ""), ("min_prob", 0.2), "--route takes two models, SMALL,LARGE"),
        (("same", " same"), ("min_prob", 0.2), "--route names the same model twice (same)"),
        (
            ("a", "b"),
            ("entropy", 0.2),
            "--escalate-below takes mean_prob, geo_mean_prob, min_prob, first_prob or "
            "first_entropy",
        ),
        (("a", "b"), ("first_entropy", 0.5), "--escalate-below first_entropy is a negated"),
        (("a", "b"), ("min_prob", 1.5), "--escalate-below min_prob is a probability from 0"),
        (
            ("a", "b"),
            ("mean_prob", float("nan")),
            "--escalate-below mean_prob is a probability from 0 to 1, not nan",
        ),
        (("a", "b"), None, "--route needs --escalate-below SIGNAL=VALUE"),
        (None, ("min_prob", 0.2), "--escalate-below needs --route SMALL,LARGE"),
    ],
)
def test_bad_route_settings_are_one_sentence(route, below, words):
    with pytest.raises(SettingsError) as e:
        check_options(ServeOptions(route=route, escalate_below=below))
    assert str(e.value).startswith(words) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--route", "x-small", "--escalate-below", "min_prob=0.2"], "--route takes two models"),
        (["--route", "a,b", "--escalate-below", "perplexity=3"], "or first_entropy (the"),
        (["--route", "a,b", "--escalate-below", "min_prob"], "takes SIGNAL=VALUE, e.g."),
        (["--route", "a,b", "--escalate-below", "min_prob=2"], "a probability from 0 to 1"),
        (["--route", "a,b", "--model", "c", "--escalate-below", "min_prob=0.2"], "not both"),
    ],
)
def test_bad_route_settings_exit_2_before_any_model_loads(argv, words):
    # models that do not exist: reaching a load would be a different error (exit 1)
    p = subprocess.run(
        [sys.executable, "-m", "engine", "serve", "--port", "0", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("logitscope: error: ") and words in line
