"""The streamed answer of an OpenAI-compatible server: Server-Sent Events (parsed
by sse_events.py) read on their own thread, so a cancel, a stalled server (no content for the stall
deadline, however many keep-alives it sends) or an endless event is noticed at
once and ends the run with one clear message."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from collections.abc import Callable, Iterator

import httpx

from engine.backends.openai.http import CONNECT_S, auth_headers, describe_exception, describe_status
from engine.backends.openai.sse_events import SSEEvent, iter_events
from engine.errors import ServerError
from engine.sessions.sanitize import clean_text

POLL_S = 0.05
HEARTBEAT_S = 5.0
MAX_EVENT_BYTES = 16 * 2**20  # one SSE event: room for a 1 MiB token, its text and bytes twice
QUEUE_EVENTS = 256  # events read ahead of the consumer; a flooding server waits
ERROR_BODY_BYTES = 64 * 1024  # of an HTTP error's body, enough for its message


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

    def __init__(
        self,
        client: httpx.Client,
        url: str,
        body: dict,
        api_key: str | None,
        stall_s: float,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ):
        self.client, self.url, self.body, self.api_key = client, url, body, api_key
        self.stall_s, self.max_event_bytes = stall_s, max_event_bytes
        self._q: queue.Queue = queue.Queue(maxsize=QUEUE_EVENTS)  # a flood waits for us
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
            with self.client.stream(
                "POST",
                self.url,
                json=self.body,
                timeout=no_read_limit,
                headers=auth_headers(self.api_key),
            ) as r:
                self._response = r
                self.server = r.headers.get("server", "").lower()
                if r.status_code >= 400:
                    body = _bounded_body(r, ERROR_BODY_BYTES)
                    self._put(
                        ("error", describe_status(r.status_code, body, self.url, self.api_key))
                    )
                    return
                for event in iter_events(r.iter_bytes(), self.max_event_bytes):
                    if not self._put(("event", event)):
                        return
            self._put(("end", None))
        except ServerError as e:
            self._put(("error", str(e)))
        except Exception as e:  # noqa: BLE001 - every failure becomes a message
            if not self._closed.is_set():
                self._put(("error", describe_exception(e, self.url)))

    def close(self) -> None:
        """Stop reading and close the response (safe from another thread)."""
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
                if kind is None or kind == "event" and (event := _event(value)) is None:
                    continue
                if kind == "error":
                    raise ServerError(value)
                if kind == "end" or event is _DONE:
                    return
                yield event
        finally:
            self.close()


def _bounded_body(r: httpx.Response, limit: int) -> str:
    """The start of an error response's body (a server may send an endless one)."""
    data = bytearray()
    for chunk in r.iter_bytes():
        data += chunk
        if len(data) >= limit:
            break
    return bytes(data[:limit]).decode("utf-8", "replace")


_DONE = object()


def _event(sse: SSEEvent):
    """The JSON object of an event; None for an empty one, _DONE for `[DONE]`."""
    data = sse.data.strip()
    if sse.event == "error":  # a server naming the event an error: its data says why
        msg = clean_text(" ".join(data.split())[:200])[0]
        raise ServerError(f"the server reported an error mid-answer: {msg}")
    if data == "[DONE]":
        return _DONE
    if not data:
        return None
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):  # nested past Python's limit: malformed too
        raise ServerError(f"the server sent a malformed event ({data[:80]!r})") from None
    if not isinstance(obj, dict):
        raise ServerError(f"the server sent an unexpected event ({data[:80]!r})")
    if "error" in obj and "choices" not in obj:
        err = obj["error"]
        msg = err.get("message") if isinstance(err, dict) else str(err)
        msg = clean_text(" ".join(str(msg).split())[:200])[0]  # one printable line
        raise ServerError(f"the server reported an error mid-answer: {msg}")
    return obj
