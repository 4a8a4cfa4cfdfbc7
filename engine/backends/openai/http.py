"""HTTP to an OpenAI-compatible server: JSON requests, a Server-Sent Events
stream read on its own thread (so a cancel or a stalled server is noticed at
once), and one clear message for every way a request can fail."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator

import httpx

from engine.errors import ServerError

CONNECT_S = 10.0
STALL_S = 120.0  # silence allowed from a server mid-request (env LOGITSCOPE_SERVER_TIMEOUT)
POLL_S = 0.05
HEARTBEAT_S = 5.0


def stall_seconds() -> float:
    try:
        value = float(os.environ.get("LOGITSCOPE_SERVER_TIMEOUT", STALL_S))
    except ValueError:
        return STALL_S
    return value if value > 0 else STALL_S


def auth_headers(api_key: str | None) -> dict:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def describe_status(status: int, body: str, url: str) -> str:
    """One line for an HTTP error, with what to do about it."""
    detail = body.strip().replace("\n", " ")
    try:
        err = json.loads(body).get("error")
        detail = err.get("message", detail) if isinstance(err, dict) else str(err or detail)
    except (ValueError, AttributeError):
        pass
    detail = detail[:200]
    hint = {
        401: "the server wants an API key: set one with Add server… (or --api-key-env)",
        403: "the API key was refused: check it with Add server…",
        404: "check the base URL (it usually ends in /v1) and the model name",
        429: "the server is busy or rate-limited: wait a moment and run again",
    }.get(status, "the server failed: check its log" if status >= 500 else "check the settings")
    return f"{url} answered HTTP {status}{f' ({detail})' if detail else ''}: {hint}"


def describe_exception(e: Exception, url: str) -> str:
    if isinstance(e, httpx.ConnectError):
        return (f"cannot connect to {url} ({_first(e)}): is the server running, "
                "and is the address right?")  # fmt: skip
    if isinstance(e, httpx.TimeoutException):
        return f"{url} did not answer in time: the server may be overloaded or stuck"
    if isinstance(e, httpx.RemoteProtocolError | httpx.ReadError):
        return (
            f"the server closed the connection mid-answer ({_first(e)}); the partial answer is kept"
        )
    return f"request to {url} failed: {type(e).__name__}: {_first(e)}"


def _first(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:160]


def _request(client: httpx.Client, method: str, url: str, api_key: str | None,
             body: dict | None = None) -> tuple[dict, httpx.Headers]:  # fmt: skip
    """One JSON request; every failure becomes a ServerError with a readable message."""
    try:
        r = client.request(method, url, json=body, headers=auth_headers(api_key))
    except httpx.HTTPError as e:
        raise ServerError(describe_exception(e, url)) from None
    if r.status_code >= 400:
        raise ServerError(describe_status(r.status_code, r.text, url))
    try:
        data = r.json()
    except ValueError:
        raise ServerError(
            f"{url} did not answer with JSON: is it an OpenAI-compatible server?"
        ) from None
    if not isinstance(data, dict):
        raise ServerError(f"{url} answered with unexpected JSON (not an object)")
    return data, r.headers


def get_json(client: httpx.Client, url: str, api_key: str | None) -> tuple[dict, httpx.Headers]:
    """GET a JSON object, with the response's headers (they tell servers apart)."""
    return _request(client, "GET", url, api_key)


def post_json(client: httpx.Client, url: str, body: dict, api_key: str | None) -> dict:
    return _request(client, "POST", url, api_key, body)[0]


class Cancelled(Exception):
    """The run was cancelled: the stream has been closed."""


class SSEStream:
    """POST a streaming request and read its `data:` events on a background thread.

    `events(should_stop)` yields each event's JSON object; it raises Cancelled
    when `should_stop()` (closing the connection, so the server stops too),
    and ServerError for HTTP errors, a malformed event, a stall longer than
    `stall_s`, or a stream cut before `[DONE]` or a finish reason.
    """

    def __init__(self, client: httpx.Client, url: str, body: dict, api_key: str | None,
                 stall_s: float):  # fmt: skip
        self.client, self.url, self.body, self.api_key = client, url, body, api_key
        self.stall_s = stall_s
        self._q: queue.Queue = queue.Queue()
        self._response = None
        self._closed = threading.Event()

    def _read(self) -> None:
        try:
            # No read timeout here: `events` watches for silence and says so itself.
            no_read_limit = httpx.Timeout(None, connect=CONNECT_S)
            with self.client.stream("POST", self.url, json=self.body, timeout=no_read_limit,
                                    headers=auth_headers(self.api_key)) as r:  # fmt: skip
                self._response = r
                if r.status_code >= 400:
                    body = r.read().decode("utf-8", "replace")
                    self._q.put(("error", describe_status(r.status_code, body, self.url)))
                    return
                for line in r.iter_lines():
                    self._q.put(("line", line))
            self._q.put(("end", None))
        except Exception as e:  # noqa: BLE001 - every failure becomes a message
            if not self._closed.is_set():
                self._q.put(("error", describe_exception(e, self.url)))

    def close(self) -> None:
        self._closed.set()
        r = self._response
        if r is not None:
            with contextlib.suppress(Exception):  # closing from another thread may race
                r.close()

    def events(self, should_stop: Callable[[], bool]) -> Iterator[dict | float]:
        """Each event's JSON; while the server is silent, the seconds waited so far
        (about every HEARTBEAT_S), so the caller can say it is still waiting."""
        threading.Thread(target=self._read, daemon=True, name="sse-reader").start()
        last = beat = time.monotonic()
        try:
            while True:
                try:
                    kind, value = self._q.get(timeout=POLL_S)
                except queue.Empty:
                    if should_stop():
                        raise Cancelled() from None
                    quiet = time.monotonic() - last
                    if quiet > self.stall_s:
                        raise ServerError(
                            f"the server sent nothing for {self.stall_s:g} s and the request "
                            "was stopped; the partial answer is kept"
                        ) from None
                    if time.monotonic() - beat > HEARTBEAT_S:
                        beat = time.monotonic()
                        yield quiet
                    continue
                last = beat = time.monotonic()
                if kind == "error":
                    raise ServerError(value)
                if kind == "end":
                    return
                event = _event(value)
                if event is _DONE:
                    return
                if event is not None:
                    yield event
                if should_stop():
                    raise Cancelled()
        finally:
            self.close()


_DONE = object()


def _event(line: str):
    """The JSON of a `data:` line; None for comments, blank lines and other fields."""
    if not line.startswith("data:"):
        return None  # `: keep-alive`, `event: ...`, blank separators
    data = line[5:].strip()
    if data == "[DONE]":
        return _DONE
    if not data:
        return None
    try:
        obj = json.loads(data)
    except ValueError:
        raise ServerError(f"the server sent a malformed event ({data[:80]!r})") from None
    if not isinstance(obj, dict):
        raise ServerError(f"the server sent an unexpected event ({data[:80]!r})")
    if "error" in obj and "choices" not in obj:
        err = obj["error"]
        msg = err.get("message") if isinstance(err, dict) else str(err)
        raise ServerError(f"the server reported an error mid-answer: {str(msg)[:200]}")
    return obj
