"""`logitscope serve` against hostile or careless clients, on a real server on
127.0.0.1: every bad request gets one 4xx in OpenAI's error shape (never a 500,
which the openai client retries three times), no traceback reaches the server's
stderr, and a refused request leaves nothing in the journal."""

from __future__ import annotations

import json

import httpx
import pytest

from engine.serve.errors import ApiError
from engine.serve.server import ServeOptions, start
from engine.serve.validation import parse_request

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
