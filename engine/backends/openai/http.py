"""HTTP to an OpenAI-compatible server: JSON requests, the checks on what is sent
(API key, model name), and one clear message for every way a request can fail.
The streamed answer is read in sse.py."""

from __future__ import annotations

import json
import re
import time

import httpx

from engine.display.units import binary_size
from engine.errors import ServerError, SettingsError
from engine.sessions.sanitize import clean_text, scrub
from engine.store import environment

CONNECT_S = 10.0
STALL_S = 120.0  # silence allowed from a server mid-request (env LOGITSCOPE_SERVER_TIMEOUT)


def stall_seconds() -> float:
    """The server's silence limit: LOGITSCOPE_SERVER_TIMEOUT or STALL_S."""
    return environment.seconds("LOGITSCOPE_SERVER_TIMEOUT", STALL_S)


MAX_MODEL_ID = 512  # characters of a server model name (real ones are under 100)


def check_api_key(key: str, where: str = "the API key") -> str:
    """The key, if it can be sent in an HTTP header (printable ASCII).

    Raises:
        SettingsError: non-ASCII, control or invalid characters in the key.
    """
    if not (key.isascii() and key.isprintable()):
        raise SettingsError(
            f"{where} holds characters an API key cannot have (non-ASCII "
            "or control characters): copy the key again"
        )
    return key


def check_model_id(model: str) -> str:
    """The server model name, if it is one a server could have.

    Raises:
        SettingsError: too long, or holding control characters or invalid text.
    """
    if len(model) > MAX_MODEL_ID:
        raise SettingsError(
            f"the server model name is {len(model)} characters long (at "
            f"most {MAX_MODEL_ID}): check --remote-model"
        )
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in model):
        raise SettingsError(
            "the server model name holds control characters or invalid text: check --remote-model"
        )
    return model


def auth_headers(api_key: str | None) -> dict:
    """The Authorization header for `api_key` ({} without one)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def describe_status(status: int, body: str, url: str, secret: str | None = None) -> str:
    """One line for an HTTP error, with what to do about it; `secret` (the API key
    sent, which a server may echo in its message) is scrubbed from it."""
    detail = " ".join(scrub(body, secret).split())
    if detail[:200].lower().lstrip().startswith(("<!doctype", "<html")):
        title = re.search(r"<title[^>]*>(.*?)</title", detail, re.I | re.S)
        detail = f"an HTML page: {title.group(1).strip()}" if title else "an HTML page"
    try:
        err = json.loads(body).get("error")
        detail = err.get("message", detail) if isinstance(err, dict) else str(err or detail)
    except (ValueError, AttributeError):
        pass
    detail = clean_text(scrub(detail, secret)[:200])[
        0
    ]  # a lone surrogate from a JSON escape: not printable
    hint = {
        401: "the server wants an API key: set one with Add server… (or --api-key-env)",
        403: "the API key was refused: check it with Add server…",
        404: "check the base URL (it usually ends in /v1) and the model name",
        429: "the server is busy or rate-limited: wait a moment and run again",
    }.get(status, "the server failed: check its log" if status >= 500 else "check the settings")
    return f"{url} answered HTTP {status}{f' ({detail})' if detail else ''}: {hint}"


def describe_exception(e: Exception, url: str) -> str:
    """One line for a failed request (connection, timeout, cut-off), with what to do."""
    if isinstance(e, httpx.ConnectError):
        return (
            f"cannot connect to {url} ({_first(e)}): is the server running, "
            "and is the address right?"
        )
    if isinstance(e, httpx.TimeoutException):
        return f"{url} did not answer in time: the server may be overloaded or stuck"
    if isinstance(e, httpx.RemoteProtocolError | httpx.ReadError):
        return (
            f"the server closed the connection mid-answer ({_first(e)}); the partial answer is kept"
        )
    return f"request to {url} failed: {type(e).__name__}: {_first(e)}"


def _first(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:160]


class RequestFailed(ServerError):
    """A request that failed; `status` is the HTTP status (None: no answer), and
    `unreachable` says nothing could connect."""

    def __init__(self, message: str, status: int | None = None, unreachable: bool = False):
        super().__init__(message)
        self.status, self.unreachable = status, unreachable


MAX_JSON_BYTES = 16 * 2**20  # of a non-streamed answer (a model list, mlx_lm.server's pass)
ERROR_BODY_BYTES = 64 * 1024  # of an HTTP error's body, enough for its message


def _request(
    client: httpx.Client,
    method: str,
    url: str,
    api_key: str | None,
    body: dict | None = None,
    timeout: float | None = None,
) -> tuple[dict, httpx.Headers]:
    """One JSON request; every failure becomes a RequestFailed with a readable message.
    The answer is read within `timeout` (else the client's read timeout) in all, and
    at most MAX_JSON_BYTES of it: a server dripping or flooding is stopped."""
    kw = {"timeout": httpx.Timeout(timeout, connect=CONNECT_S)} if timeout else {}
    deadline = time.monotonic() + (timeout or client.timeout.read or STALL_S)
    try:
        with client.stream(method, url, json=body, headers=auth_headers(api_key), **kw) as r:
            error = r.status_code >= 400
            raw = _read(r, url, ERROR_BODY_BYTES if error else MAX_JSON_BYTES, deadline, error)
    except (httpx.HTTPError, httpx.InvalidURL) as e:
        raise RequestFailed(
            describe_exception(e, url), None, isinstance(e, httpx.ConnectError)
        ) from None
    if error:
        text = raw.decode("utf-8", "replace")
        raise RequestFailed(describe_status(r.status_code, text, url, api_key), r.status_code)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise RequestFailed(
            f"{url} did not answer with JSON: is it an OpenAI-compatible server?", r.status_code
        ) from None
    if not isinstance(data, dict):
        raise RequestFailed(f"{url} answered with unexpected JSON (not an object)", r.status_code)
    return data, r.headers


def _read(r: httpx.Response, url: str, limit: int, deadline: float, cut: bool) -> bytes:
    """The body of `r`, at most `limit` bytes (`cut`: the rest ignored, else refused)
    and read before `deadline` (time.monotonic()).

    Raises:
        RequestFailed: the body is longer than `limit` (unless `cut`) or still coming
            at the deadline.
    """
    data = bytearray()
    for chunk in r.iter_bytes():
        data += chunk
        if len(data) > limit:
            if cut:
                break
            raise RequestFailed(
                f"{url} answered with more than {binary_size(limit)}: is it an "
                "OpenAI-compatible server?",
                r.status_code,
            )
        if time.monotonic() > deadline:
            raise RequestFailed(
                f"{url} did not finish answering in time: the server may be overloaded or stuck",
                r.status_code,
            )
    return bytes(data[:limit])


def get_json(
    client: httpx.Client, url: str, api_key: str | None, timeout: float | None = None
) -> tuple[dict, httpx.Headers]:
    """GET a JSON object, with the response's headers (they tell servers apart)."""
    return _request(client, "GET", url, api_key, timeout=timeout)


def post_json(client: httpx.Client, url: str, body: dict, api_key: str | None) -> dict:
    """POST `body` to `url` and return the JSON object it answers."""
    return _request(client, "POST", url, api_key, body)[0]
