"""The Starlette application: OpenAI's routes over the scheduler.

Every refusal is one JSON error in OpenAI's shape with a 4xx status (401 without
the API key, 404 for an unknown model or route, 408 (and the connection closed)
for a body that does not arrive within BODY_TIMEOUT_S, 413 for a body over
MAX_BODY (read through and discarded up to MAX_DISCARDED_BODY, so a client that
sends its whole body before reading sees the 413 rather than a reset), 429 with
Retry-After when the queue is full, 400 for anything malformed); a bug is a 500
with the same shape and no traceback (that goes to the server's stderr). A
request's headers have their own deadline (server.py).

Routing (`ServeState.route`, `logitscope serve --route SMALL,LARGE --escalate-below
SIGNAL=VALUE`): the small model answers every request as it asks (greedy or sampled);
the confidence signal of that answer, computed from its own token log-probabilities
(mean_prob: the arithmetic mean token probability; min_prob: the least one), is
compared with the threshold with engine/lab/routing.decide; below it, the large model
answers the same request instead. Both answers are held until the request is decided
(a streamed request gets its chunks then), so a large model that fails (or whose queue
is full, or whose context the prompt does not fit) leaves the small model's answer,
marked not escalated, never a lost request. The response's `model` names the model
that answered and its `logitscope` extension says why: {"routed": "small"|"large",
"escalated", "signal", "value", "threshold", "reason", "small_run", "large_run"}. Both
runs are in the server's journal, named for the decision, the large run naming the
small run's id ("escalated from SESSION/1: min token p 0.08 < 0.20").
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass

from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from engine.errors import LogitscopeError, SettingsError
from engine.lab import routing
from engine.run.prompt import encode_prompt
from engine.serve import events_feed
from engine.serve.errors import ApiError, error_body
from engine.serve.events import ClientInfo
from engine.serve.jobs import END, Job
from engine.serve.scheduler import QueueFull, Scheduler
from engine.serve.stream import Answer
from engine.serve.validation import parse_request
from engine.store import bounded_json

MAX_BODY = 1 << 20  # bytes of a request body (1 MB); more is 413
MAX_DISCARDED_BODY = 16 * MAX_BODY  # a body over MAX_BODY up to this is read, then 413
BODY_TIMEOUT_S = 30.0  # a request's whole body must arrive within this; else 408, closed
ROUTE_SIGNALS = routing.RUN_SIGNALS  # computable from an answer's own token records


@dataclass
class Escalation:
    """The large model a route escalates to, and when (the small one is ServeState's)."""

    model_name: str
    context_length: int
    tokenizer: object
    scheduler: Scheduler
    signal: str  # one of ROUTE_SIGNALS
    threshold: float  # escalate when the small answer's signal is below it


@dataclass
class ServeState:
    """What the routes need: the model's name and context, its tokenizer, the scheduler
    (with a route: the small model's, and the Escalation to the large one)."""

    model_name: str
    context_length: int
    tokenizer: object
    scheduler: Scheduler
    api_key: str | None = None
    created: int = 0
    body_timeout_s: float = BODY_TIMEOUT_S
    route: Escalation | None = None


def _auth(state: ServeState, request: Request) -> None:
    if state.api_key is None:
        return
    given = request.headers.get("authorization", "")
    token = given[7:] if given.lower().startswith("bearer ") else ""
    if not hmac.compare_digest(token.encode(), state.api_key.encode()):
        raise ApiError(
            401,
            "a valid API key is required (Authorization: Bearer …)",
            code="invalid_api_key",
            kind="authentication_error",
        )


async def _read_json(request: Request, timeout_s: float):
    """The body as JSON, read within `timeout_s` (a stalled client gets 408, closed)."""
    try:
        async with asyncio.timeout(timeout_s):
            data = await _read_body(request)
    except TimeoutError:
        raise ApiError(
            408,
            f"the request body did not arrive within {timeout_s:g} s",
            code="request_timeout",
            headers={"Connection": "close"},
        ) from None
    except ClientDisconnect:  # nobody is left to read the answer
        raise ApiError(400, "the client left before sending the whole body") from None
    try:  # nesting and number literals bounded before the parser recurses or overflows
        return bounded_json.loads(bytes(data), what="the request body")
    except bounded_json.JsonLimitError as e:
        raise ApiError(400, str(e), code="invalid_json") from None
    except ValueError:  # not JSON, or bytes that do not decode
        raise ApiError(400, "the request body is not valid JSON", code="invalid_json") from None


async def _read_body(request: Request) -> bytearray:
    """The body, at most MAX_BODY bytes.

    A larger one is read to its end and discarded, then refused (413), when it is at
    most MAX_DISCARDED_BODY: a client that sends all of it before reading (urllib,
    requests) then reads the 413 instead of a reset connection. A larger one still
    is refused at once and the connection closed.
    """
    size = request.headers.get("content-length")
    declared = int(size) if size and size.isdigit() else None  # h11 checked its form
    if declared is not None and declared > MAX_DISCARDED_BODY:
        raise _too_large(declared, close=True)
    data, total = bytearray(), 0
    async for part in request.stream():
        total += len(part)
        if total > MAX_DISCARDED_BODY:
            raise _too_large(None, close=True)
        if total <= MAX_BODY:
            data += part
    if total > MAX_BODY:
        raise _too_large(total)
    return data


def _too_large(size: int | None, close: bool = False) -> ApiError:
    got = f" ({size:,} bytes)" if size is not None else ""
    return ApiError(
        413,
        f"the request body is over {MAX_BODY:,} bytes{got}",
        code="request_too_large",
        headers={"Connection": "close"} if close else None,
    )


def _names(state: ServeState) -> list[str]:
    return [state.model_name] + ([state.route.model_name] if state.route else [])


def _check_model(state: ServeState, name) -> None:
    names = _names(state)
    if name is not None and name not in names:
        served = " and ".join(f"'{n}'" for n in names)
        raise ApiError(
            404,
            f"the model '{str(name)[:100]}' does not exist; this server serves {served}",
            param="model",
            code="model_not_found",
        )


def _check_fits(state: ServeState | Escalation, req) -> None:
    """400 unless the prompt encodes and fits the context with room for one token."""
    try:
        n = len(encode_prompt(state.tokenizer, req.prompt, req.settings).ids)
    except SettingsError as e:
        raise ApiError(400, str(e), param="messages" if req.chat else "prompt") from None
    if n >= state.context_length:
        raise ApiError(
            400,
            f"the prompt is {n:,} tokens but this model's context window is "
            f"{state.context_length:,} tokens (at most {state.context_length - 1:,} "
            "for the prompt, leaving one for the answer)",
            param="messages" if req.chat else "prompt",
            code="context_length_exceeded",
        )


def _client(request: Request) -> ClientInfo:
    c = request.client
    address = f"{c.host}:{c.port}" if c else "unknown"
    return ClientInfo(address, request.headers.get("user-agent", "")[:200], request.url.path)


async def _watch_disconnect(request: Request, job: Job) -> None:
    """Cancel the job when the client goes away (the body is already read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            job.cancel()
            return


def _submit(scheduler: Scheduler, job: Job) -> None:
    """Queue `job`, or 429 with Retry-After when the queue is full."""
    try:
        scheduler.submit(job)
    except QueueFull as e:
        raise ApiError(
            429,
            "the server is busy: every batch slot and queue place is taken; "
            f"retry in {e.retry_after} s",
            code="rate_limit_exceeded",
            kind="rate_limit_error",
            headers={"Retry-After": str(e.retry_after)},
        ) from None


async def _completions(request: Request, chat: bool):
    state: ServeState = request.app.state.serve
    _auth(state, request)
    req = parse_request(await _read_json(request, state.body_timeout_s), chat)
    _check_model(state, req.model)
    await run_in_threadpool(_check_fits, state, req)
    if state.route is not None:
        return await _routed(request, state, req)
    request_id = uuid.uuid4().hex[:24]
    job = Job(req, request_id, _client(request))
    _submit(state.scheduler, job)
    watcher = asyncio.create_task(_watch_disconnect(request, job))
    answer = Answer(req, request_id, state.model_name)
    try:
        first = await job.queue.get()
    except BaseException:
        job.cancel()
        watcher.cancel()
        raise
    if isinstance(first, ApiError) or first is END:
        watcher.cancel()
        raise (
            first
            if isinstance(first, ApiError)
            else ApiError(503, "the server is stopping", kind="server_error")
        )
    if req.stream:
        return EventSourceResponse(_events(job, answer, first, watcher), ping=15)
    try:
        item = first
        while item is not END:
            if isinstance(item, ApiError):
                raise item
            answer.chunks(item)
            item = await job.queue.get()
    finally:
        job.cancel()
        watcher.cancel()
    if answer.done is None or answer.done.finish_reason == "cancelled":
        raise ApiError(503, "the request was cancelled", kind="server_error")
    return JSONResponse(answer.response())


async def _events(job: Job, answer: Answer, first, watcher):
    try:
        item = first
        while item is not END:
            if isinstance(item, ApiError):
                yield {"data": json.dumps(item.body())}
                break
            for chunk in answer.chunks(item):
                yield {"data": json.dumps(chunk)}
            item = await job.queue.get()
        yield {"data": "[DONE]"}
    finally:
        job.cancel()
        watcher.cancel()


# -- routing ------------------------------------------------------------------------------
class _Watched:
    """The jobs of one routed request, all cancelled when its client leaves."""

    def __init__(self):
        self.jobs: list[Job] = []
        self.gone = False

    def add(self, job: Job) -> Job:
        self.jobs.append(job)
        if self.gone:
            job.cancel()
        return job

    def cancel(self) -> None:
        for job in self.jobs:
            job.cancel()


async def _watch_all(request: Request, watched: _Watched) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            watched.gone = True
            watched.cancel()
            return


async def _held(job: Job) -> list:
    """Every record of `job` once it ended (its ApiError raised; 503 when cancelled)."""
    records = []
    while (item := await job.queue.get()) is not END:
        if isinstance(item, ApiError):
            raise item
        records.append(item)
    done = next((r for r in records if r.type == "done"), None)
    if done is None or done.finish_reason == "cancelled":
        raise ApiError(503, "the request was cancelled", kind="server_error")
    return records


async def _ask(scheduler: Scheduler, req, request_id: str, client, watched: _Watched):
    """One model's whole answer to `req`: (its records, its run id)."""
    job = watched.add(Job(req, request_id, client))
    _submit(scheduler, job)
    records = await _held(job)
    return records, job.run.run_id if job.run is not None else None


def _name_runs(journal, small_run, large_run, reason: str) -> None:
    """Name both runs for the decision; the large one names the small one's id."""
    if journal is None:
        return
    with contextlib.suppress(LogitscopeError):  # a name is a nicety; the answer goes on
        if small_run is not None:
            journal.meta(small_run, name=f"routed: {reason}")
        if large_run is not None:
            why = reason.removesuffix(": escalated")
            journal.meta(large_run, name=f"escalated from {small_run or 'an unsaved run'}: {why}")


async def _routed(request: Request, state: ServeState, req):
    """The small model answers; below the threshold the large one answers instead."""
    route = state.route
    request_id = uuid.uuid4().hex[:24]
    client = _client(request)
    watched = _Watched()
    watcher = asyncio.create_task(_watch_all(request, watched))
    try:
        records, small_run = await _ask(state.scheduler, req, request_id, client, watched)
        value = routing.run_signal(route.signal, records)
        escalated, reason = routing.decide(route.signal, value, route.threshold)
        large_run, name = None, state.model_name
        if escalated:
            try:
                await run_in_threadpool(_check_fits, route, req)
                big, large_run = await _ask(route.scheduler, req, request_id, client, watched)
                records, name = big, route.model_name
            except Exception as e:  # noqa: BLE001 - a failing large model never loses a request
                if watched.gone:
                    raise
                error = e.message if isinstance(e, ApiError) else f"{type(e).__name__}: {e}"
                escalated, reason = False, routing.failed(reason, error)
                started = watched.jobs[1].run if len(watched.jobs) > 1 else None
                large_run = started.run_id if started is not None else None  # its failed run
        await run_in_threadpool(_name_runs, state.scheduler.journal, small_run, large_run, reason)
    except BaseException:
        watched.cancel()
        watcher.cancel()
        raise
    extension = {
        "routed": "large" if escalated else "small",
        "escalated": escalated,
        "signal": route.signal,
        "value": value,
        "threshold": route.threshold,
        "reason": reason,
        "small_run": small_run,
        "large_run": large_run,
    }
    answer = Answer(req, request_id, name)
    if req.stream:
        return EventSourceResponse(_routed_events(answer, records, extension, watcher), ping=15)
    watcher.cancel()
    for record in records:
        answer.chunks(record)
    return JSONResponse({**answer.response(), "logitscope": extension})


async def _routed_events(answer: Answer, records: list, extension: dict, watcher):
    try:
        for record in records:
            for chunk in answer.chunks(record):
                yield {"data": json.dumps({**chunk, "logitscope": extension})}
        yield {"data": "[DONE]"}
    finally:
        watcher.cancel()


async def chat_completions(request: Request):
    return await _completions(request, chat=True)


async def completions(request: Request):
    return await _completions(request, chat=False)


def _model_entry(state: ServeState) -> dict:
    return {
        "id": state.model_name,
        "object": "model",
        "created": state.created,
        "owned_by": "logitscope",
        "max_model_len": state.context_length,
    }


def _entries(state: ServeState) -> list[dict]:
    entries = [_model_entry(state)]
    if state.route is not None:
        r = state.route
        entries.append({**entries[0], "id": r.model_name, "max_model_len": r.context_length})
    return entries


async def models(request: Request):
    state: ServeState = request.app.state.serve
    _auth(state, request)
    return JSONResponse({"object": "list", "data": _entries(state)})


async def model(request: Request):
    state: ServeState = request.app.state.serve
    _auth(state, request)
    name = request.path_params["name"]
    _check_model(state, name)
    return JSONResponse(next(e for e in _entries(state) if e["id"] == name))


async def events(request: Request):
    """`GET /logitscope/events`: every request's events, live (engine/serve/events_feed.py)."""
    state: ServeState = request.app.state.serve
    _auth(state, request)
    hello = {"model": state.model_name, "context_length": state.context_length}
    feed = events_feed.stream(request.app.state.feed, hello)
    return EventSourceResponse(feed, ping=events_feed.PING_S)


async def _api_error(request: Request, e: ApiError):
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


async def _http_error(request: Request, e: HTTPException):
    kind = "not_found_error" if e.status_code == 404 else "invalid_request_error"
    message = f"{request.method} {request.url.path}: {e.detail}"
    return JSONResponse(error_body(message, kind), status_code=e.status_code)


async def _bug(request: Request, e: Exception):
    import sys
    import traceback

    traceback.print_exception(e, file=sys.stderr)
    body = error_body("the server failed to answer this request", "server_error")
    return JSONResponse(body, status_code=500)


def make_app(state: ServeState, cors: list[str] | None = None) -> Starlette:
    """The application over `state`; CORS only for the origins in `cors`."""
    state.created = state.created or int(time.time())
    routes = [
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{name:path}", model, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/logitscope/events", events, methods=["GET"]),
    ]
    middleware = []
    if cors:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=cors,
                allow_methods=["GET", "POST"],
                allow_headers=["*"],
            )
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _bug},
    )
    app.state.serve = state
    schedulers = [state.scheduler] + ([state.route.scheduler] if state.route else [])
    app.state.feed = events_feed.EventsFeed(*schedulers)
    return app
