"""The server's live events (`GET /logitscope/events`), read on a background thread.

Each server-sent event's JSON object goes on `queue` as ("event", dict); a broken or
refused connection as ("error", message in words), after which the reader tries again
every RETRY_S until closed (a server still loading answers nothing yet). The GUI drains
the queue on its own timer (follow.py): nothing here touches Qt or MLX.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading

RETRY_S = 1.0
CONNECT_S = 5.0
MAX_EVENT_BYTES = 16 * 2**20


def events_url(base_url: str) -> str:
    """The feed's URL from a server's base URL (http://HOST:PORT/v1), reached over the
    loopback when the server listens on every address."""
    root = base_url.removesuffix("/").removesuffix("/v1")
    root = root.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")
    return root + "/logitscope/events"


class FeedReader:
    """Follows one server's events until `close()`."""

    def __init__(self, base_url: str, api_key: str | None = None):
        self.url, self.api_key = events_url(base_url), api_key
        self.queue: queue.Queue = queue.Queue()
        self._closed = threading.Event()
        self._response = None
        self._thread = threading.Thread(target=self._run, name="serve-follow", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop reading (safe from any thread; the thread ends at once)."""
        self._closed.set()
        r = self._response
        if r is not None:
            with contextlib.suppress(Exception):  # closing from another thread may race
                r.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def _run(self) -> None:
        import httpx  # here, not at the window's start (~0.15 s)

        from engine.backends.openai.sse_events import iter_events

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        timeout = httpx.Timeout(None, connect=CONNECT_S)  # the feed is quiet between requests
        while not self._closed.is_set():
            try:
                with httpx.stream("GET", self.url, headers=headers, timeout=timeout) as r:
                    self._response = r
                    if r.status_code != 200:
                        r.read()
                        raise ConnectionError(_refusal(r))
                    for e in iter_events(r.iter_bytes(), MAX_EVENT_BYTES):
                        if self._closed.is_set():
                            return
                        self.queue.put(("event", json.loads(e.data)))
            except Exception as e:  # noqa: BLE001 - every failure is said, then retried
                if not self._closed.is_set():
                    self.queue.put(("error", _describe(e, self.url)))
            self._closed.wait(RETRY_S)


def _refusal(r) -> str:
    try:
        message = r.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = r.text[:200]
    return f"the server refused to share its requests (HTTP {r.status_code}: {message})"


def _describe(e: Exception, url: str) -> str:
    import httpx

    if isinstance(e, ConnectionError):
        return str(e)
    if isinstance(e, httpx.ConnectError):
        return f"cannot reach {url}"
    return f"the feed at {url} broke off ({type(e).__name__}: {str(e)[:120]})"
