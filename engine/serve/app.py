"""The Starlette application: OpenAI's routes over the scheduler.

Every refusal is one JSON error in OpenAI's shape with a 4xx status (401 without
the API key, 404 for an unknown model or route, 408 (and the connection closed)
for a body that does not arrive within BODY_TIMEOUT_S, 413 for a body over
MAX_BODY (read through and discarded up to MAX_DISCARDED_BODY, so a client that
sends its whole body before reading sees the 413 rather than a reset), 429 with
Retry-After when the queue is full, 400 for anything malformed); a bug is a 500
with the same shape and no traceback (that goes to the server's stderr). A
request's headers have their own deadline (server.py).
"""

from __future__ import annotations

import asyncio
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

from engine import bounded_json
from engine.errors import SettingsError
from engine.prompt import encode_prompt
from engine.serve import events_feed
from engine.serve.errors import ApiError, error_body
from engine.serve.events import ClientInfo
from engine.serve.jobs import END, Job
from engine.serve.scheduler import QueueFull, Scheduler
from engine.serve.stream import Answer
from engine.serve.validation import parse_request

MAX_BODY = 1 << 20  # bytes of a request body (1 MB); more is 413
MAX_DISCARDED_BODY = 16 * MAX_BODY  # a body over MAX_BODY up to this is read, then 413
BODY_TIMEOUT_S = 30.0  # a request's whole body must arrive within this; else 408, closed


@dataclass
class ServeState:
    """What the routes need: the model's name and context, its tokenizer, the scheduler."""

    model_name: str
    context_length: int
    tokenizer: object
    scheduler: Scheduler
    api_key: str | None = None
    created: int = 0
    body_timeout_s: float = BODY_TIMEOUT_S


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


def _check_model(state: ServeState, name) -> None:
    if name is not None and name != state.model_name:
        raise ApiError(
            404,
            f"the model '{str(name)[:100]}' does not exist; this server "
            f"serves '{state.model_name}'",
            param="model",
            code="model_not_found",
        )


def _check_fits(state: ServeState, req) -> None:
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


async def _completions(request: Request, chat: bool):
    state: ServeState = request.app.state.serve
    _auth(state, request)
    req = parse_request(await _read_json(request, state.body_timeout_s), chat)
    _check_model(state, req.model)
    await run_in_threadpool(_check_fits, state, req)
    request_id = uuid.uuid4().hex[:24]
    job = Job(req, request_id, _client(request))
    try:
        state.scheduler.submit(job)
    except QueueFull as e:
        raise ApiError(
            429,
            "the server is busy: every batch slot and queue place is taken; "
            f"retry in {e.retry_after} s",
            code="rate_limit_exceeded",
            kind="rate_limit_error",
            headers={"Retry-After": str(e.retry_after)},
        ) from None
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


async def models(request: Request):
    state: ServeState = request.app.state.serve
    _auth(state, request)
    return JSONResponse({"object": "list", "data": [_model_entry(state)]})


async def model(request: Request):
    state: ServeState = request.app.state.serve
    _auth(state, request)
    _check_model(state, request.path_params["name"])
    return JSONResponse(_model_entry(state))


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
    app.state.feed = events_feed.EventsFeed(state.scheduler)
    return app
