"""HTTP to an OpenAI-compatible server: JSON requests, a Server-Sent Events
stream read on its own thread (so a cancel or a stalled server is noticed at
once), and one clear message for every way a request can fail."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator

import httpx

from engine.errors import ServerError, SettingsError
from engine.sessions.sanitize import clean_text

CONNECT_S = 10.0
STALL_S = 120.0  # silence allowed from a server mid-request (env LOGITSCOPE_SERVER_TIMEOUT)
POLL_S = 0.05
HEARTBEAT_S = 5.0
MAX_EVENT_BYTES = 32 * 2**20  # one SSE line: room for a 1 MB token, its bytes listed twice
QUEUE_LINES = 256  # lines read ahead of the consumer; a flooding server waits
ERROR_BODY_BYTES = 64 * 1024  # of an HTTP error's body, enough for its message


def stall_seconds() -> float:
    try:
        value = float(os.environ.get("LOGITSCOPE_SERVER_TIMEOUT", STALL_S))
    except ValueError:
        return STALL_S
    return value if value > 0 else STALL_S


MAX_MODEL_ID = 512  # characters of a server model name (real ones are under 100)


def check_api_key(key: str, where: str = "the API key") -> str:
    """The key, if it can be sent in an HTTP header (printable ASCII).

    Raises:
        SettingsError: non-ASCII, control or invalid characters in the key.
    """
    if not (key.isascii() and key.isprintable()):
        raise SettingsError(f"{where} holds characters an API key cannot have (non-ASCII "
                            "or control characters): copy the key again")  # fmt: skip
    return key


def check_model_id(model: str) -> str:
    """The server model name, if it is one a server could have.

    Raises:
        SettingsError: too long, or holding control characters or invalid text.
    """
    if len(model) > MAX_MODEL_ID:
        raise SettingsError(f"the server model name is {len(model)} characters long (at "
                            f"most {MAX_MODEL_ID}): check --remote-model")  # fmt: skip
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in model):
        raise SettingsError("the server model name holds control characters or invalid "
                            "text: check --remote-model")  # fmt: skip
    return model


def auth_headers(api_key: str | None) -> dict:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def describe_status(status: int, body: str, url: str) -> str:
    """One line for an HTTP error, with what to do about it."""
    detail = " ".join(body.split())
    if detail[:200].lower().lstrip().startswith(("<!doctype", "<html")):
        title = re.search(r"<title[^>]*>(.*?)</title", detail, re.I | re.S)
        detail = f"an HTML page: {title.group(1).strip()}" if title else "an HTML page"
    try:
        err = json.loads(body).get("error")
        detail = err.get("message", detail) if isinstance(err, dict) else str(err or detail)
    except (ValueError, AttributeError):
        pass
    detail = clean_text(detail[:200])[0]  # a lone surrogate from a JSON escape: not printable
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


class RequestFailed(ServerError):
    """A request that failed; `status` is the HTTP status (None: no answer), and
    `unreachable` says nothing could connect."""

    def __init__(self, message: str, status: int | None = None, unreachable: bool = False):
        super().__init__(message)
        self.status, self.unreachable = status, unreachable


def _request(client: httpx.Client, method: str, url: str, api_key: str | None,
             body: dict | None = None, timeout: float | None = None,
             ) -> tuple[dict, httpx.Headers]:  # fmt: skip
    """One JSON request; every failure becomes a RequestFailed with a readable message."""
    kw = {"timeout": httpx.Timeout(timeout, connect=CONNECT_S)} if timeout else {}
    try:
        r = client.request(method, url, json=body, headers=auth_headers(api_key), **kw)
    except (httpx.HTTPError, httpx.InvalidURL) as e:
        raise RequestFailed(describe_exception(e, url), None,
                            isinstance(e, httpx.ConnectError)) from None  # fmt: skip
    if r.status_code >= 400:
        raise RequestFailed(describe_status(r.status_code, r.text, url), r.status_code)
    try:
        data = r.json()
    except ValueError:
        raise RequestFailed(
            f"{url} did not answer with JSON: is it an OpenAI-compatible server?", r.status_code
        ) from None
    if not isinstance(data, dict):
        raise RequestFailed(f"{url} answered with unexpected JSON (not an object)", r.status_code)
    return data, r.headers


def get_json(client: httpx.Client, url: str, api_key: str | None,
             timeout: float | None = None) -> tuple[dict, httpx.Headers]:  # fmt: skip
    """GET a JSON object, with the response's headers (they tell servers apart)."""
    return _request(client, "GET", url, api_key, timeout=timeout)


def post_json(client: httpx.Client, url: str, body: dict, api_key: str | None) -> dict:
    return _request(client, "POST", url, api_key, body)[0]


class Cancelled(Exception):
    """The run was cancelled: the stream has been closed."""


class Stalled(ServerError):
    """No content arrived within the stall deadline (keep-alives do not count)."""


class SSEStream:
    """POST a streaming request and read its `data:` events on a background thread.

    `events(should_stop)` yields each event's JSON object; it raises Cancelled
    when `should_stop()` (closing the connection, so the server stops too),
    Stalled when the caller has not reported content (`progressed()`) for
    `stall_s` (comments, blank lines and empty events do not count), and
    ServerError for HTTP errors, a malformed event, an event over
    `max_event_bytes`, or a stream cut before `[DONE]` or a finish reason.
    """

    def __init__(self, client: httpx.Client, url: str, body: dict, api_key: str | None,
                 stall_s: float, max_event_bytes: int = MAX_EVENT_BYTES):  # fmt: skip
        self.client, self.url, self.body, self.api_key = client, url, body, api_key
        self.stall_s, self.max_event_bytes = stall_s, max_event_bytes
        self._q: queue.Queue = queue.Queue(maxsize=QUEUE_LINES)  # a flood waits for us
        self._response = None
        self._closed = threading.Event()
        self._last_content = time.monotonic()
        self.server = ""  # the answer's Server header, lower case (tells servers apart)

    def progressed(self) -> None:
        """The last event carried content: the stall deadline starts again."""
        self._last_content = time.monotonic()

    def set_deadline(self, stall_s: float) -> None:
        """A new stall deadline, counted from now (e.g. a short one after max_tokens)."""
        self.stall_s = stall_s
        self.progressed()

    def _put(self, item) -> bool:
        while not self._closed.is_set():
            try:
                self._q.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _read(self) -> None:
        try:
            # No read timeout here: `events` watches for silence and says so itself.
            no_read_limit = httpx.Timeout(None, connect=CONNECT_S)
            with self.client.stream("POST", self.url, json=self.body, timeout=no_read_limit,
                                    headers=auth_headers(self.api_key)) as r:  # fmt: skip
                self._response = r
                self.server = r.headers.get("server", "").lower()
                if r.status_code >= 400:
                    body = _bounded_body(r, ERROR_BODY_BYTES)
                    self._put(("error", describe_status(r.status_code, body, self.url)))
                    return
                for line in sse_lines(r.iter_bytes(), self.max_event_bytes):
                    if not self._put(("line", line)):
                        return
            self._put(("end", None))
        except ServerError as e:
            self._put(("error", str(e)))
        except Exception as e:  # noqa: BLE001 - every failure becomes a message
            if not self._closed.is_set():
                self._put(("error", describe_exception(e, self.url)))

    def close(self) -> None:
        self._closed.set()
        r = self._response
        if r is not None:
            with contextlib.suppress(Exception):  # closing from another thread may race
                r.close()

    def events(self, should_stop: Callable[[], bool]) -> Iterator[dict | float]:
        """Each event's JSON; while no content arrives, the seconds waited so far
        (about every HEARTBEAT_S), so the caller can say it is still waiting."""
        threading.Thread(target=self._read, daemon=True, name="sse-reader").start()
        beat = time.monotonic()
        self.progressed()
        try:
            while True:
                try:
                    kind, value = self._q.get(timeout=POLL_S)
                except queue.Empty:
                    kind = value = None
                if should_stop():
                    raise Cancelled()
                now = time.monotonic()
                quiet = now - self._last_content
                if quiet > self.stall_s:  # checked on every line: a flood of nothing stalls too
                    raise Stalled(
                        f"the server sent no tokens for {self.stall_s:g} s and the request was "
                        "stopped; the partial answer is kept (a slow server: raise "
                        "LOGITSCOPE_SERVER_TIMEOUT)"
                    )
                if now - beat > HEARTBEAT_S:
                    beat = now
                    yield quiet
                if kind is None or kind == "line" and (event := _event(value)) is None:
                    continue
                if kind == "error":
                    raise ServerError(value)
                if kind == "end" or event is _DONE:
                    return
                yield event
        finally:
            self.close()


def sse_lines(chunks: Iterator[bytes], max_bytes: int) -> Iterator[str]:
    """The lines of a byte stream, decoded (bad UTF-8 replaced), none over `max_bytes`.

    Raises:
        ServerError: a line (one event's data) longer than `max_bytes`, or a last
            line cut off by the end of the stream.
    """
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            if end - start > max_bytes:
                break
            yield bytes(buf[start:end]).rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
        del buf[:start]
        if len(buf) > max_bytes:
            raise ServerError(
                f"the server sent one event of more than {max_bytes / 2**20:g} MB and the "
                "request was stopped; the partial answer is kept"
            )
    if buf.strip():  # an event without its end: the connection was cut inside it
        raise ServerError(
            "the server closed the connection mid-answer (inside an event); the partial "
            "answer is kept"
        )


def _bounded_body(r: httpx.Response, limit: int) -> str:
    """The start of an error response's body (a server may send an endless one)."""
    data = bytearray()
    for chunk in r.iter_bytes():
        data += chunk
        if len(data) >= limit:
            break
    return bytes(data[:limit]).decode("utf-8", "replace")


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
        msg = clean_text(" ".join(str(msg).split())[:200])[0]  # one printable line
        raise ServerError(f"the server reported an error mid-answer: {msg}")
    return obj
