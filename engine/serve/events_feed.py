"""`GET /logitscope/events`: the server's live request events as server-sent events.

A follower (the window's *Follow requests*) reads one JSON object per event, without
loading MLX: `{"kind": "subscribed", ...}` once, then per request "started" (run id,
prompt or chat messages, settings, client address and user agent, model), one
"record" per engine record (`engine.run.records.to_dict`; `record_from_dict` rebuilds it)
and "ended" (outcome, and the run's done or error record). Each event's SSE `event:`
field is its kind too.

The model thread only appends each event to every subscriber's bounded queue: a
follower more than MAX_PENDING events behind is dropped (told with a "dropped"
event, then the stream ends), so a slow follower never stalls decoding. Serializing
to JSON happens on the event loop. Only this server's events are fed: listeners are
process-wide, and a process may run more than one server (tests do).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import deque

from engine.run.records import to_dict
from engine.serve.events import RequestEvent, add_listener, remove_listener

MAX_PENDING = 4096  # events a follower may be behind before it is dropped
PING_S = 15


class Subscriber:
    """One follower's bounded queue, filled from the model thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int = MAX_PENDING):
        self.loop, self.limit = loop, limit
        self.items: deque = deque()
        self.dropped = False
        self._lock = threading.Lock()
        self._wake = asyncio.Event()

    def offer(self, item) -> None:
        """Queue `item` (any thread); never blocks: past the limit the follower drops."""
        with self._lock:
            if self.dropped:
                return
            if len(self.items) >= self.limit:
                self.dropped = True
                self.items.clear()
            else:
                self.items.append(item)
        with contextlib.suppress(RuntimeError):  # a closed loop: the server is stopping
            self.loop.call_soon_threadsafe(self._wake.set)

    async def next(self):
        """The next item; None once the follower was dropped."""
        while True:
            with self._lock:
                if self.dropped:
                    return None
                if self.items:
                    return self.items.popleft()
            self._wake.clear()  # a set scheduled after this line still wakes us
            await self._wake.wait()


class EventsFeed:
    """Fans this server's request events out to its subscribers."""

    def __init__(self, *schedulers):
        """`schedulers`: this server's (two under `--route`: the small and the large
        model's, so both attempts of a routed request are followed)."""
        self.schedulers = schedulers
        self.subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._ends: dict[tuple, object] = {}  # (request id, run id) -> its done/error record

    def _ours(self) -> bool:
        # Events are emitted on the model thread of the server that made them.
        me = threading.current_thread()
        return any(me is getattr(s, "_thread", None) for s in self.schedulers)

    def _on_event(self, event: RequestEvent) -> None:
        if not self._ours():
            return
        key = (event.request_id, event.run_id)  # a routed request has two runs
        if event.kind == "record" and event.record.type in ("done", "error"):
            self._ends[key] = event.record
        elif event.kind == "ended":
            event = (event, self._ends.pop(key, None))
        with self._lock:
            subscribers = list(self.subscribers)
        for s in subscribers:
            s.offer(event)

    def subscribe(self, limit: int = MAX_PENDING) -> Subscriber:
        """A new follower (on the event loop's thread)."""
        s = Subscriber(asyncio.get_running_loop(), limit)
        with self._lock:
            if not self.subscribers:
                add_listener(self._on_event)
            self.subscribers.append(s)
        return s

    def unsubscribe(self, s: Subscriber) -> None:
        """The follower left."""
        with self._lock:
            if s in self.subscribers:
                self.subscribers.remove(s)
            if not self.subscribers:
                remove_listener(self._on_event)
                self._ends.clear()


def event_dict(item) -> dict:
    """One queued event as the feed's JSON object."""
    end = None
    if isinstance(item, tuple):
        item, end = item
    base = {"kind": item.kind, "request_id": item.request_id, "run_id": item.run_id}
    if item.kind == "started":
        c = item.client
        client = {"address": c.address, "user_agent": c.user_agent, "route": c.route} if c else None
        settings = item.settings.to_dict() if item.settings is not None else None
        return {**base, "prompt": item.prompt, "settings": settings, "client": client,
                "model": item.model}  # fmt: skip
    if item.kind == "record":
        return {**base, "record": to_dict(item.record)}
    return {**base, "outcome": item.outcome, "record": to_dict(end) if end else None}


async def stream(feed: EventsFeed, hello: dict):
    """The SSE events of one follower: "subscribed", then each event as it comes."""
    s = feed.subscribe()
    try:
        yield {"event": "subscribed", "data": json.dumps({"kind": "subscribed", **hello})}
        while True:
            item = await s.next()
            if item is None:
                why = f"this follower fell more than {s.limit} events behind"
                yield {"event": "dropped", "data": json.dumps({"kind": "dropped", "reason": why})}
                return
            data = event_dict(item)
            yield {"event": data["kind"], "data": json.dumps(data)}
    finally:
        feed.unsubscribe(s)
