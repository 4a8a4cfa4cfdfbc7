"""`logitscope serve` against hostile or careless clients, on a real server on
127.0.0.1: every bad request gets one 4xx in OpenAI's error shape (never a 500,
which the openai client retries three times), no traceback reaches the server's
stderr, and a refused request leaves nothing in the journal."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import httpx
import pytest

from engine.serve.app import MAX_DISCARDED_BODY
from engine.serve.errors import ApiError
from engine.serve.server import ServeOptions, start
from engine.serve.validation import parse_request
from engine.sessions.journal import read_session

HI = [{"role": "user", "content": "hi"}]
DIGITS_400 = "9" * 400  # past float's range: float() overflows, and past the body's limit


@pytest.fixture(scope="module")
def server(default_model_path):
    handle = start(ServeOptions(model=str(default_model_path), port=0, max_batch=1, max_queue=2))
    yield handle
    handle.stop()


def _post(server, route: str, data: bytes) -> httpx.Response:
    headers = {"content-type": "application/json"}
    return httpx.post(server.url + route, content=data, headers=headers, timeout=30)


def _error(r: httpx.Response, status: int) -> dict:
    """The response's OpenAI error, once its status and shape are checked."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert list(body) == ["error"]
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["type"] == "invalid_request_error" and err["message"]
    return err


def _chat(**fields) -> bytes:
    return json.dumps({"messages": HI, "max_tokens": 1, **fields}).encode()


def _with_number(key: str, literal: str) -> bytes:
    return b'{"messages": [{"role": "user", "content": "hi"}], "%s": %s}' % (
        key.encode(),
        literal.encode(),
    )


BAD_BODIES = [
    # (id, body, param, code, words in the message)
    (
        "role-list",
        json.dumps({"messages": [{"role": ["user"], "content": "hi"}]}).encode(),
        "messages[0].role",
        "invalid_value",
        "role of system, developer, user or assistant",
    ),
    (
        "role-object",
        json.dumps({"messages": [{"role": {"a": 1}, "content": "hi"}]}).encode(),
        "messages[0].role",
        "invalid_value",
        "role of system, developer, user or assistant",
    ),
    *[
        (
            f"{key}-400-digits",
            _with_number(key, DIGITS_400),
            None,
            "invalid_json",
            "the request body holds a number longer than 100 characters (line 1)",
        )
        for key in (
            "temperature",
            "top_p",
            "min_p",
            "repetition_penalty",
            "frequency_penalty",
            "presence_penalty",
        )
    ],
    (
        "nested-1000-in-ignored-field",
        b'{"messages": [{"role": "user", "content": "hi"}], "metadata": '
        + b"[" * 1000
        + b"]" * 1000
        + b"}",
        None,
        "invalid_json",
        "the request body nests deeper than 64 levels (line 1)",
    ),
    (
        "nested-1000-objects",
        b'{"user": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1000 + b"}",
        None,
        "invalid_json",
        "the request body nests deeper than 64 levels (line 1)",
    ),
]


@pytest.mark.parametrize(
    ("body", "param", "code", "words"),
    [b[1:] for b in BAD_BODIES],
    ids=[b[0] for b in BAD_BODIES],
)
def test_bad_input_gets_a_400_naming_it_and_no_traceback(server, capfd, body, param, code, words):
    journal_before = server.journal.path.read_bytes()
    err = _error(_post(server, "/chat/completions", body), 400)
    assert (err["param"], err["code"]) == (param, code)
    assert words in err["message"]
    assert server.journal.path.read_bytes() == journal_before  # a refusal is not a run
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    "key", ["temperature", "top_p", "min_p", "repetition_penalty", "frequency_penalty"]
)
def test_a_whole_number_past_floats_range_names_its_field(key):
    """Past the body's limit the parser refuses it; a dict from elsewhere gets the field."""
    with pytest.raises(ApiError) as e:
        parse_request({"messages": HI, key: int(DIGITS_400)}, chat=True)
    assert (e.value.status, e.value.param, e.value.code) == (400, key, "invalid_value")
    assert e.value.message.endswith(", got " + "9" * 37 + "...")  # shortened, not 400 digits


def test_a_client_retrying_bad_input_is_answered_the_same_and_good_input_still_runs(server, capfd):
    """The openai client's three retries of a 500 never happen: one 400 each time,
    and the server goes on answering."""
    bad = json.dumps({"messages": [{"role": ["user"], "content": "hi"}]}).encode()
    for _ in range(3):
        assert _error(_post(server, "/chat/completions", bad), 400)["param"] == "messages[0].role"
    r = _post(server, "/chat/completions", _chat(temperature=0))
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 1
    assert "Traceback" not in capfd.readouterr().err


def _completion(**fields) -> bytes:
    return json.dumps({"prompt": "The sky is", "max_tokens": 1, **fields}).encode()


def _parts(*texts) -> bytes:
    content = [{"type": "text", "text": t} for t in texts]
    return _chat(messages=[{"role": "user", "content": content}])


REFUSED_FIELDS = [
    # (id, route, body, param, words in the message)
    ("echo-and-logprobs", "/completions", _completion(echo=True, logprobs=2), "echo",
     "'echo' is not supported"),
    ("echo-alone", "/completions", _completion(echo=True), "echo", "'echo' is not supported"),
    ("echo-not-bool", "/completions", _completion(echo="yes"), "echo",
     "'echo' must be true or false"),
    ("best-of-2", "/completions", _completion(best_of=2), "best_of",
     "only best_of=1 is supported"),
    ("best-of-text", "/completions", _completion(best_of="1"), "best_of",
     "'best_of' must be a whole number"),
    ("suffix", "/completions", _completion(suffix=" and the sea"), "suffix",
     "'suffix' is not supported"),
    ("suffix-not-text", "/completions", _completion(suffix=3), "suffix", "'suffix' must be text"),
    ("part-text-object", "/chat/completions", _parts({"a": 1}), "messages[0].content[0].text",
     "messages[0].content[0].text must be text, got {'a': 1}"),
    ("part-text-missing", "/chat/completions",
     _chat(messages=[{"role": "user", "content": [{"type": "text"}]}]),
     "messages[0].content[0].text", "must be text, got None"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("route", "body", "param", "words"),
    [f[1:] for f in REFUSED_FIELDS],
    ids=[f[0] for f in REFUSED_FIELDS],
)
def test_fields_that_would_change_the_answer_are_refused_by_name(
    server, capfd, route, body, param, words
):
    journal_before = server.journal.path.read_bytes()
    err = _error(_post(server, route, body), 400)
    assert (err["param"], err["code"]) == (param, "invalid_value")
    assert words in err["message"]
    assert server.journal.path.read_bytes() == journal_before
    assert "Traceback" not in capfd.readouterr().err


def test_their_neutral_values_are_accepted_and_text_parts_are_joined_exactly(server):
    plain = _post(server, "/completions", _completion(temperature=0))
    neutral = _post(
        server,
        "/completions",
        _completion(temperature=0, echo=False, best_of=1, suffix="", logprobs=None),
    )
    assert plain.status_code == neutral.status_code == 200, neutral.text
    text = plain.json()["choices"][0]["text"]
    assert neutral.json()["choices"][0]["text"] == text  # no prompt echoed in front
    assert _post(server, "/completions", _completion(suffix=None)).status_code == 200
    r = _post(server, "/chat/completions", _parts("Name a ", "", "colour."))
    assert r.status_code == 200, r.text
    run = read_session(server.journal.path).runs[-1]
    assert run.prompt == "Name a colour."
    assert len(run.tokens) == 1


def _raw(server, request: bytes) -> bytes:
    """Everything the server sends back on one connection, until it closes it."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(request)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    return raw


def _raw_error(raw: bytes, status: int) -> dict:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {status} "), raw[:300]
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    err = json.loads(body)["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert (err["type"], err["param"]) == ("invalid_request_error", None)
    return err


def test_a_10_mb_body_gets_413_that_a_urllib_client_can_read(server, capfd):
    """urllib sends the whole body before reading (and asks to close): the server reads it
    through, discarding it, and answers, instead of resetting the connection."""
    request = urllib.request.Request(
        server.url + "/chat/completions",
        data=b"{" + b" " * (10 << 20) + b"}",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(request, timeout=60)
    assert e.value.code == 413
    assert e.value.headers["content-type"] == "application/json"
    body = json.loads(e.value.read())
    assert body == {
        "error": {
            "message": "the request body is over 1,048,576 bytes (10,485,762 bytes)",
            "type": "invalid_request_error",
            "param": None,
            "code": "request_too_large",
        }
    }
    assert "Traceback" not in capfd.readouterr().err


def test_a_chunked_body_over_the_limit_is_counted_and_refused(server):
    def chunks():
        for _ in range(3):
            yield b" " * (1 << 20)

    r = httpx.post(server.url + "/completions", content=chunks(), timeout=60)
    err = _error(r, 413)
    assert err["code"] == "request_too_large"
    assert err["message"] == "the request body is over 1,048,576 bytes (3,145,728 bytes)"


def test_a_body_declared_past_the_discard_bound_is_refused_at_once(server):
    size = MAX_DISCARDED_BODY + 1
    raw = _raw(
        server,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Length: %d\r\n\r\n{" % size,
    )  # nothing more is sent: the answer and the close do not wait for the body
    err = _raw_error(raw, 413)
    assert err["message"] == f"the request body is over 1,048,576 bytes ({size:,} bytes)"


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
        b"Content-Length: 6\r\n\r\n{}",
        b"GARBAGE\r\n\r\n",
    ],
    ids=["content-length-abc", "two-content-lengths", "no-request-line"],
)
def test_requests_h11_cannot_parse_get_openais_shape(server, capfd, request_bytes):
    err = _raw_error(_raw(server, request_bytes), 400)
    assert err["code"] == "invalid_http"
    assert err["message"].startswith("the request is not valid HTTP/1.1")
    assert "Traceback" not in capfd.readouterr().err


def test_a_client_leaving_mid_body_leaves_no_traceback_and_no_run(server, capfd):
    journal_before = server.journal.path.read_bytes()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Length: 100\r\n\r\n{"messages": '
        )
        time.sleep(0.3)  # the app is waiting for the rest
    time.sleep(0.3)
    assert httpx.get(server.url + "/models", timeout=10).status_code == 200
    assert server.journal.path.read_bytes() == journal_before
    assert "Traceback" not in capfd.readouterr().err
