"""Servers that misbehave (tests/hostile_server.py): each run ends within its deadline
with one clear message, the partial answer kept, and every step shown is also in
the journal (no bad lines) and in the exports. Deadlines are 1 s here."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import time

import pytest

from engine.backends.base import open_backend
from engine.errors import ServerError
from engine.run.records import ErrorRecord
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings
from engine.sessions.export import FORMATS, render
from engine.sessions.journal import Journal, read_session
from tests.hostile_server import DONE, HostileServer, Reset, event, finish, forever, token

STALL_S = 1.0
SETTINGS = SamplingSettings(temperature=0, max_tokens=6, seed=3, top_n=5)
NEVER_ENDED = 30.0  # before these fixes the runs below never ended; this only catches that
KEEP_ALIVE = b": keep-alive\n\n"
EMPTY = event({"choices": [{"index": 0, "delta": {}, "finish_reason": None}]})


@pytest.fixture
def server():
    s = HostileServer()
    yield s
    s.close()


def journaled_run(server, tmp_path, model="m", settings=SETTINGS):
    """Run against `server` as the CLI does, journaling every record; check that
    the journal holds every step shown and that every export renders them."""
    backend = open_backend("openai", stall_s=STALL_S)
    journal = Journal.create(tmp_path)
    run_id = journal.start_run("q", settings.to_dict(), None)
    shown, t0 = RunResult(), time.monotonic()
    try:
        records = [backend.load(f"{server.url}#{model}", lambda *a: None)]
        records += backend.generate("q", settings, lambda: False)
    except ServerError as e:
        records = [ErrorRecord(str(e), "server")]
    finally:
        backend.close()
    elapsed = time.monotonic() - t0
    for record in records:
        shown.add(record)
        journal.record(run_id, record)
    journal.close()
    session = read_session(journal.path)
    assert session.bad_lines == 0
    logged = session.runs[0]
    assert logged.tokens == shown.tokens  # every step shown is kept, as shown
    csv.field_size_limit(2**24)  # the 1 MB token's cell
    rows = list(csv.reader(io.StringIO(render("csv", session, [logged]))))
    assert len(rows) == 1 + len(shown.tokens)
    for fmt in FORMATS:
        render(fmt, session, [logged]).encode("utf-8")  # valid text, no surrogates
    assert elapsed < NEVER_ENDED
    return shown, elapsed


def ends_with_error(shown: RunResult, words: str, tokens: int) -> str:
    message = shown.done.error if shown.done else shown.error.message
    assert words in message, message
    assert len(shown.tokens) == tokens and "\n" not in message
    if tokens:
        assert shown.done.finish_reason == "error" and shown.done.text == "a" * tokens
    return message


# -- 10. hangs ----------------------------------------------------------------------
def test_a_stream_past_max_tokens_is_stopped_at_max_tokens(server, tmp_path):
    server.stream = lambda write: forever(write, token("a"))
    shown, _ = journaled_run(server, tmp_path)
    assert shown.done.finish_reason == "length" and shown.done.error is None
    assert len(shown.tokens) == SETTINGS.max_tokens == shown.done.generated_tokens


@pytest.mark.parametrize(
    "filler", [b"\n", KEEP_ALIVE, EMPTY], ids=["blank lines", "keep-alives", "empty events"]
)
def test_the_stall_deadline_counts_content_not_bytes(server, tmp_path, filler):
    server.stream = lambda write: (write(token("a")), forever(write, filler))
    shown, elapsed = journaled_run(server, tmp_path)
    ends_with_error(shown, f"no tokens for {STALL_S:g} s", 1)
    assert elapsed >= STALL_S


def test_nothing_but_keep_alives_is_a_clear_error(server, tmp_path):
    server.stream = lambda write: forever(write, KEEP_ALIVE, 0.01)
    shown, _ = journaled_run(server, tmp_path)
    ends_with_error(shown, "no tokens for 1 s", 0)


def test_an_endless_event_is_bounded(server, tmp_path):
    server.stream = lambda write: (write(token("a") + b"data: "), forever(write, b"x" * 2**16))
    shown, _ = journaled_run(server, tmp_path)
    ends_with_error(shown, "one event of more than 16 MiB", 1)


def test_a_token_over_1_mb_is_refused_with_its_size(server, tmp_path):
    server.stream = lambda write: (write(token("a")), write(token("x" * (2**20 + 1))))
    shown, _ = journaled_run(server, tmp_path)
    message = ends_with_error(shown, "a token of 1,048,577 characters (at most 1,048,576", 1)
    assert "(at most 1,048,576, 1 MiB)" in message and "partial answer is kept" in message


def test_a_5_mb_token_in_a_10_mb_event_is_refused(server, tmp_path):
    """The event that froze the window: refused whole, nothing of it shown or kept."""
    big = "y" * 5 * 2**20
    chunk = {"choices": [{"index": 0, "delta": {"content": big}, "finish_reason": None}]}
    server.stream = lambda write: (write(token("a")), write(event({**chunk, "pad": big})))
    shown, _ = journaled_run(server, tmp_path)
    ends_with_error(shown, "a token of 5,242,880 characters", 1)


def test_all_tokens_then_silence_ends_as_length(server, tmp_path):
    server.stream = lambda write: (write(token("a") * 6), forever(write, KEEP_ALIVE, 0.01))
    shown, _ = journaled_run(server, tmp_path)
    assert shown.done.finish_reason == "length" and len(shown.tokens) == 6


# -- 11. odd steps are recorded, sanitised and flagged ------------------------------
ODD_STEPS = [
    token("n", math.nan),
    token("h", 1e308),
    token("l", -1e308),
    token("i", -math.inf),
    token("j", math.inf),
    token("s", "abc"),
    token("d", top={"x": 1}),
    token("t", top=[1, "x", None, {"token": "t", "logprob": math.nan}]),
    token(
        "o",
        top=[
            {"token": "o", "logprob": -0.1, "id": -5},
            {"token": "p", "logprob": -1.0, "id": 2**62},
        ],
        id=2**62,
    ),
    token("k" * 2**20),  # a 1 MB token, its bytes listed
]


def test_odd_steps_are_kept_sanitised_and_flagged(server, tmp_path):
    server.stream = lambda write: [write(e) for e in (*ODD_STEPS, finish("stop"), DONE)]
    shown, _ = journaled_run(
        server, tmp_path, settings=dataclasses.replace(SETTINGS, max_tokens=20)
    )
    tokens = shown.tokens
    assert [t.text[:1] for t in tokens] == list("nhlijsdtok")
    assert shown.done.finish_reason == "eos" and shown.done.text.endswith("k" * 2**20)
    odd = {t.text[:1]: " | ".join(t.oddities) for t in tokens}
    assert "NaN" in odd["n"] and tokens[0].logprob is None
    assert tokens[1].logprob == 0.0 and "out of range" in odd["h"]
    assert tokens[2].logprob == -1e9 and "out of range" in odd["l"]
    assert tokens[3].logprob is None  # -inf: filtered out, as local runs record it
    assert tokens[4].logprob == 0.0 and "out of range" in odd["j"]
    assert tokens[5].logprob is None and "malformed logprob" in odd["s"]
    assert tokens[6].top == () and "not a list" in odd["d"]
    assert [c.text for c in tokens[7].top] == [] and "left out" in odd["t"]
    assert tokens[8].token_id < 0 and "out of range" in odd["o"]
    assert [c.token_id < 0 for c in tokens[8].top] == [True, True]
    assert tokens[9].bytes is None and "bytes are not kept" in odd["k"]
    session = read_session(next(tmp_path.glob("*.jsonl")))
    for fmt in ("md", "html"):  # the reports say so too
        assert "10 step(s) made valid: " in render(fmt, session, session.runs)


# -- 12. what used to be internal errors --------------------------------------------
def test_lone_surrogates_and_wrong_types_are_not_internal_errors(server, tmp_path):
    surrogate = b'data: {"choices": [{"index": 0, "delta": {"content": "a\\ud800"}}]}\n\n'
    wrong = [
        event(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": "b"},
                        "logprobs": {"content": [5]},
                        "finish_reason": 7,
                    }
                ]
            }
        ),
        event({"choices": [{"index": 0, "delta": "zzz"}]}),
        finish(
            "length",
            usage={"prompt_tokens": "12"},
            timings={
                "prompt_n": 3,
                "prompt_ms": 5.0,
                "cache_n": "x",
                "predicted_n": 2,
                "predicted_ms": math.nan,
            },
        ),
    ]
    server.stream = lambda write: [write(e) for e in (surrogate, *wrong, DONE)]
    shown, _ = journaled_run(server, tmp_path)
    assert [t.text for t in shown.tokens] == ["a\ufffd", "b"]
    assert "surrogates" in shown.tokens[0].oddities[0]
    assert "malformed logprobs entry" in shown.tokens[1].oddities[0]
    d = shown.done
    assert d.finish_reason == "length" and d.prompt_tokens == 3  # prompt_n; cache_n ignored
    assert d.decode_tps is None and math.isclose(d.prefill_tps, 600.0)


def test_invalid_text_in_errors_and_model_ids(server, tmp_path):
    server.models = (200, b'{"data": [{"id": "bad\\ud800"}, {"id": "m"}]}', 0.0)
    server.stream = lambda write: write(
        token("a") + b'data: {"error": {"message": "x\\udcff\\n"}}\n\n'
    )
    shown, _ = journaled_run(server, tmp_path, model="")
    assert shown.model.name == "m"  # an id no request could name is left out
    ends_with_error(shown, "error mid-answer: x\ufffd", 1)


def test_http_500_with_an_html_page(server, tmp_path):
    server.status, server.error_body = (
        500,
        b"<!DOCTYPE html>\n<html><head><title>Internal\n"
        b"Server Error</title></head><body>" + b"<p>x</p>" * 10_000 + b"</body></html>",
    )
    shown, _ = journaled_run(server, tmp_path)
    message = ends_with_error(shown, "HTTP 500 (an HTML page: Internal Server Error)", 0)
    assert "check its log" in message and len(message) < 300


# -- 13. errors say what happened ---------------------------------------------------
def test_finish_reason_error_says_so(server, tmp_path):
    server.stream = lambda write: [write(e) for e in (token("a"), finish("error"), DONE)]
    shown, _ = journaled_run(server, tmp_path)
    ends_with_error(shown, "finish_reason 'error'", 1)
    session = read_session(next(tmp_path.glob("*.jsonl")))
    assert "| error | `the server ended the answer with finish_reason 'error'" in render(
        "md", session, session.runs
    )
    assert "finish_reason &#x27;error&#x27;" in render("html", session, session.runs)


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_connection_cut_mid_event(server, tmp_path, reset):
    def stream(write):
        write(token("a") + b'data: {"choi')
        time.sleep(0.1)
        if reset:
            raise Reset

    server.stream = stream
    shown, _ = journaled_run(server, tmp_path)
    ends_with_error(shown, "closed the connection mid-answer", 1)


# -- 14. a failing /v1/models does not stop the run ---------------------------------
@pytest.mark.parametrize(
    "models",
    [
        "CRASH",
        (500, b"<html><title>Traceback</title></html>", 0.0),
        (200, b"[1, 2]", 0.0),
        (200, b"{}", NEVER_ENDED),
    ],
    ids=["mlx_lm.server without a HF cache", "HTTP 500", "not a model list", "slow"],
)
@pytest.mark.parametrize("model", ["m", ""])
def test_a_failing_model_list_does_not_stop_the_run(server, tmp_path, models, model):
    server.models = models
    server.stream = lambda write: [write(e) for e in (token("a"), finish("stop"), DONE)]
    shown, elapsed = journaled_run(server, tmp_path, model=model)
    assert shown.done.text == "a" and shown.done.finish_reason == "eos"
    body = server.requests[-1]["body"]
    assert body.get("model") == (model or None)  # unnamed: the server's default
    assert shown.model.name == (model or "the server's default model")


def test_mlx_lm_server_without_a_model_list_still_gets_its_logprobs_pass(server, tmp_path):
    server.models, server.server_header = "CRASH", "BaseHTTP/0.6 Python/3.11"
    server.stream = lambda write: [
        write(e)
        for e in (
            event({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]}),
            finish("stop"),
            DONE,
        )
    ]
    journaled_run(server, tmp_path, settings=dataclasses.replace(SETTINGS, top_n=20))
    second = server.requests[-1]["body"]  # mlx_lm.server's non-streamed pass, its top-k cap
    assert second["stream"] is False and second["top_logprobs"] == 10 and second["seed"] == 3


def test_when_the_request_fails_too_both_failures_are_said(server, tmp_path):
    server.models = (500, b"boom", 0.0)
    server.status, server.error_body = 404, b'{"error": {"message": "no such route"}}'
    shown, _ = journaled_run(server, tmp_path)
    message = ends_with_error(shown, "HTTP 404 (no such route)", 0)
    assert "the model list failed" in message and "HTTP 500 (boom)" in message


def test_a_refused_api_key_still_stops_at_the_model_list(server, tmp_path):
    server.models = (401, b'{"error": "bad key"}', 0.0)
    shown, _ = journaled_run(server, tmp_path)
    ends_with_error(shown, "HTTP 401 (bad key)", 0)
    assert [r["path"] for r in server.requests] == ["/v1/models"]


# -- through the command line: one clear line, the right exit code ------------------
def cli(server, tmp_path, *args):
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "LOGITSCOPE_DATA_DIR": str(tmp_path / "data"),
        "LOGITSCOPE_SERVER_TIMEOUT": str(STALL_S),
    }
    argv = [sys.executable, "-m", "engine", "generate", "--endpoint", server.url, "--prompt", "q"]
    p = subprocess.run([*argv, *args], capture_output=True, env=env, timeout=120)
    err = p.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err
    return p.returncode, p.stdout.decode(), err.splitlines()


def _then(*chunks, filler=None):
    def stream(write):
        for c in chunks:
            write(c)
        if filler:
            forever(write, filler, 0.01)

    return stream


@pytest.mark.parametrize(
    ("stream", "words"),
    [
        (_then(token("a"), finish("error"), DONE), "finish_reason 'error'"),
        (_then(token("a"), filler=KEEP_ALIVE), "no tokens for 1 s"),
        (_then(token("a"), b'data: {"choi'), "closed the connection mid-answer"),
    ],
    ids=["finish_reason error", "stall", "cut mid-event"],
)
def test_the_plain_cli_says_why_a_run_failed(server, tmp_path, stream, words):
    server.stream = stream
    code, out, err = cli(server, tmp_path, "--temp", "0")
    errors = [ln for ln in err if ln[:1] != "["]
    assert code == 1 and out == "a\n" and err[-2].startswith("[error] 1 tokens")
    assert len(errors) == 1 and errors[0].startswith("logitscope: error: ") and words in errors[0]


def test_an_html_error_page_in_json_mode(server, tmp_path):
    server.status, server.error_body = 500, b"<html><title>Oops</title><body>\n</body></html>"
    code, out, err = cli(server, tmp_path, "--json")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and err == []
    assert (
        records[-1]["type"] == "error" and "HTTP 500 (an HTML page: Oops)" in records[-1]["message"]
    )


def test_the_seed_drawn_is_in_the_stats_line_and_the_exports(server, tmp_path):
    server.stream = lambda write: [write(e) for e in (token("a"), finish("stop"), DONE)]
    code, out, err = cli(server, tmp_path, "--temp", "0.7")  # no --seed: one is drawn
    seed = server.requests[-1]["body"]["seed"]
    assert code == 0 and err[-1].startswith("[eos] 1 tokens") and err[-1].endswith(f"seed {seed}")
    from engine.sessions.export import render
    from engine.sessions.journal import read_session

    (path,) = (tmp_path / "data" / "sessions").glob("*.jsonl")
    session = read_session(path)
    run = session.runs[0]
    assert run.settings["seed"] is None and run.done.seed == seed
    assert f"| seed | `{seed}` |" in render("md", session, [run])
    assert f"seed={seed}" in render("html", session, [run])


# -- 13. non-streamed answers: bounded in size and time ------------------------------
def list_models(server, timeout: float):
    import httpx

    from engine.backends.openai.catalogue import server_info

    with httpx.Client() as client:
        return server_info(client, server.url, None, timeout)


def test_a_model_list_that_drips_forever_ends_at_its_deadline(server):
    server.models = lambda write: (write(b'{"data": ['), forever(write, b" ", 0.01))
    t0 = time.monotonic()
    with pytest.raises(ServerError, match="did not finish answering in time"):
        list_models(server, STALL_S)
    assert STALL_S <= time.monotonic() - t0 < NEVER_ENDED


def test_a_model_list_over_16_mb_is_refused(server):
    server.models = lambda write: (write(b'{"data": ['), forever(write, b" " * 2**20))
    with pytest.raises(ServerError, match="answered with more than 16 MiB"):
        list_models(server, 60.0)


def test_a_deeply_nested_model_list_is_not_an_internal_error(server):
    server.models = (200, b"[" * 100_000 + b"]" * 100_000, 0.0)
    with pytest.raises(ServerError, match="did not answer with JSON"):
        list_models(server, 5.0)


def test_a_deeply_nested_event_is_a_malformed_event(server, tmp_path):
    server.stream = lambda write: (write(token("a")), write(b"data: " + b"[" * 100_000 + b"\n\n"))
    shown, _ = journaled_run(server, tmp_path)
    ends_with_error(shown, "the server sent a malformed event", 1)
