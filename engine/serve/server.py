"""Starting the server: claim the port, load the model, open the "server" session,
run uvicorn.

The port is bound before anything else is done, so a port in use (or an address
that is not this machine's) is one sentence naming --port or --host, with no model
loaded and no empty session left in History; uvicorn is handed the bound socket.

`serve()` runs in the foreground until Ctrl-C (the CLI); `start()` runs it on a
thread and returns a handle with the bound port (tests, benchmarks, and a GUI
that starts it from a menu). Listening beyond the loopback needs an API key.

A client cannot hold a connection forever: a request's headers must arrive within
HEADER_TIMEOUT_S of the connection (or of its first byte after a kept-alive answer;
uvicorn closes a connection idle KEEP_ALIVE_S after its last answer), else a 408 in
OpenAI's shape and the connection closed; its body has BODY_TIMEOUT_S
(engine/serve/app.py). A request h11 cannot parse (`Content-Length: abc`, a
malformed request line or header), which uvicorn refuses before the app sees it,
gets a 400 in OpenAI's shape too.

A connection closed after an error answer while the client may still be sending
(headers or a body not yet whole, or a request h11 could not parse) is closed the
way Apache and nginx close it, lingering: the server half-closes (the client reads
the answer, then EOF) and reads and discards what still arrives until the client
closes its side or LINGER_S pass. Closing at once with unread bytes in the socket
would reset the connection (RST), which can discard the answer before the client
reads it.

With `route` (`--route SMALL,LARGE --escalate-below SIGNAL=VALUE`) two models are
loaded, each on its own scheduler thread, both journaled in the one "Server" session;
the app routes every request (engine/serve/app.py). The route's settings are checked
before the port is claimed or any model loads.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from dataclasses import dataclass

from engine.errors import SettingsError
from engine.serve.app import BODY_TIMEOUT_S, ROUTE_SIGNALS, Escalation, ServeState, make_app
from engine.serve.protocol import HEADER_TIMEOUT_S, DeadlineProtocol
from engine.serve.scheduler import DEFAULT_BATCH, DEFAULT_QUEUE, Scheduler
from engine.sessions.journal import Journal
from engine.store import environment

LOOPBACK = ("127.0.0.1", "localhost", "::1")
LISTEN_BACKLOG = 2048  # connections the kernel queues before accepting (uvicorn's default)
KEEP_ALIVE_S = 5  # an idle connection is closed this long after its last answer


@dataclass(frozen=True)
class ServeOptions:
    """How to serve: the model, where to listen, who may ask, how many at once."""

    model: str | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    api_key: str | None = None  # never logged, never journaled
    cors: tuple[str, ...] = ()
    max_batch: int = DEFAULT_BATCH
    max_queue: int = DEFAULT_QUEUE
    journal: bool = True
    header_timeout_s: float = HEADER_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    route: tuple[str, ...] | None = None  # (small, large): route every request
    escalate_below: tuple[str, float] | None = None  # (signal, threshold) of the route


def check_route(options: ServeOptions) -> None:
    """Refuse a route that cannot work, before any model loads: not two models, the same
    model twice, a signal an answer's own token probabilities do not give, a threshold
    out of range, or a half of the route settings without the other.

    Raises:
        SettingsError: one sentence naming the option to change.
    """
    from engine.lab.routing import check_threshold, model_key

    route, below = options.route, options.escalate_below
    if route is None:
        if below is not None:
            raise SettingsError(
                "--escalate-below needs --route SMALL,LARGE: the two models a request is "
                "routed between"
            )
        return
    if options.model is not None:
        raise SettingsError("give either --model or --route SMALL,LARGE, not both")
    specs = [m.strip() for m in route]
    if len(specs) != 2 or not all(specs):
        raise SettingsError(
            "--route takes two models, SMALL,LARGE: the small one answers first and the "
            f"large one when the small one is not confident enough (given: {','.join(route)!r})"
        )
    if model_key(specs[0]) == model_key(specs[1]):
        raise SettingsError(
            f"--route names the same model twice ({specs[0]}): routing needs a larger "
            "model to escalate to"
        )
    if below is None:
        raise SettingsError(
            "--route needs --escalate-below SIGNAL=VALUE (e.g. min_prob=0.2): below it, "
            "the large model answers instead"
        )
    signal, value = below
    if signal not in ROUTE_SIGNALS:
        *first, last = ROUTE_SIGNALS
        raise SettingsError(
            f"--escalate-below takes {', '.join(first)} or {last} (the signals an answer's "
            f"own token probabilities give), not {signal!r}"
        )
    check_threshold(signal, value, f"--escalate-below {signal}")


def check_options(options: ServeOptions) -> None:
    """Refuse to listen beyond this machine without an API key; refuse a bad route.

    Raises:
        SettingsError: a non-loopback host and no key, a bad port or a bad route.
    """
    check_route(options)
    if options.host not in LOOPBACK and not options.api_key:
        raise SettingsError(
            f"listening on {options.host} lets other machines use this model: give an API "
            "key with --api-key-env VAR (the name of an environment variable holding it)"
        )
    if not 0 <= options.port <= 65535:
        raise SettingsError(f"--port must be from 0 to 65535, got {options.port}")


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` and listening (port 0: any free port).

    Raises:
        SettingsError: the port is in use or reserved, or the host is not this
            machine's; one sentence saying which option to change.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError):
        raise SettingsError(
            f"{host} is not an address this machine can listen on: give one of its "
            "addresses with --host (127.0.0.1: this machine only)"
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError as e:
        sock.close()
        raise SettingsError(_listen_error(host, port, e)) from None
    return sock


def _listen_error(host: str, port: int, e: OSError) -> str:
    if e.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is in use: another program (perhaps another "
            "logitscope serve) listens there; choose another with --port"
        )
    if e.errno == errno.EACCES:
        return (
            f"port {port} on {host} is reserved for the administrator: choose one from "
            "1024 up with --port"
        )
    if e.errno == errno.EADDRNOTAVAIL:
        return (
            f"{host} is not an address of this machine: give one of its addresses with "
            "--host (127.0.0.1: this machine only)"
        )
    reason = e.strerror or str(e)
    return f"cannot listen on port {port} of {host} ({reason}): choose another with --port"


@dataclass
class Served:
    """A prepared server: its listening socket, the app, its scheduler, the journal and
    the model's record."""

    socket: socket.socket
    app: object
    scheduler: Scheduler
    journal: Journal | None
    record: object
    large: Scheduler | None = None  # a route's large model's scheduler

    def stop(self) -> None:
        """End every model thread."""
        self.scheduler.stop()
        if self.large is not None:
            self.large.stop()


def prepare(options: ServeOptions, progress=None) -> Served:
    """Claim the port, load the model and build the app and scheduler (the model thread
    is started). Nothing is loaded or journaled when the port cannot be had.

    Raises:
        SettingsError: bad options, or the port cannot be listened on.
    """
    check_options(options)
    sock = listen(options.host, options.port)
    try:
        return _load(options, sock, progress)
    except BaseException:
        sock.close()
        raise


def _load(options: ServeOptions, sock: socket.socket, progress) -> Served:
    import mlx_lm.generate  # noqa: F401 - its MLX stream made on this thread, not the model's

    from engine.backends.mlx.backend import MLXBackend
    from engine.serve.runs import model_dict

    def load(spec):
        backend = MLXBackend()
        # float32 on the BLAS, as the lab runs: a batch's matrix products pay for it
        backend.prefer = environment.text("LOGITSCOPE_COMPUTE") or "speed"
        record = backend.load(spec, progress or (lambda message, fraction: None))
        return backend.lm, record

    small, large = options.route or (options.model, None)
    lm, record = load(small)
    route, large_scheduler = None, None
    if large is not None:
        large_lm, large_record = load(large)
    journal = Journal.create(title="Server") if options.journal else None
    compute = threading.Lock()  # a route's two models never compute at once
    scheduler = Scheduler(
        lm, model_dict(record), journal, options.max_batch, options.max_queue, compute
    )
    scheduler.start()
    if large is not None:
        large_scheduler = Scheduler(
            large_lm,
            model_dict(large_record),
            journal,
            options.max_batch,
            options.max_queue,
            compute,
        )
        large_scheduler.start()
        signal, threshold = options.escalate_below
        route = Escalation(
            large_record.name,
            large_lm.context_length,
            large_lm.tokenizer,
            large_scheduler,
            signal,
            float(threshold),
        )
    state = ServeState(
        record.name,
        lm.context_length,
        lm.tokenizer,
        scheduler,
        options.api_key,
        body_timeout_s=options.body_timeout_s,
        route=route,
    )
    app = make_app(state, list(options.cors) or None)
    return Served(sock, app, scheduler, journal, record, large_scheduler)


def _protocol(options: ServeOptions) -> type[DeadlineProtocol]:
    """The protocol class uvicorn makes each connection with, with the options' deadline."""
    return type(
        "ServeProtocol", (DeadlineProtocol,), {"header_timeout_s": options.header_timeout_s}
    )


def _config(served: Served, options: ServeOptions):
    import uvicorn

    return uvicorn.Config(
        served.app,
        host=options.host,
        port=options.port,
        http=_protocol(options),
        timeout_keep_alive=KEEP_ALIVE_S,
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=5,
    )


def serve(options: ServeOptions, progress=None, ready=None) -> None:
    """Serve in the foreground until interrupted; `ready(port)` once listening."""
    import uvicorn

    served = prepare(options, progress)
    server = uvicorn.Server(_config(served, options))
    if ready is not None:
        threading.Thread(target=_announce, args=(server, ready), daemon=True).start()
    try:
        server.run(sockets=[served.socket])
    finally:
        served.stop()


def _announce(server, ready) -> None:
    while not server.started:
        time.sleep(0.05)
    ready(server.servers[0].sockets[0].getsockname()[1])


class Handle:
    """A server running on a thread: its port, URL, journal and `stop()`."""

    def __init__(self, served: Served, server, thread: threading.Thread):
        self.served, self.server, self.thread = served, server, thread
        self.port = server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    @property
    def journal(self) -> Journal | None:
        """The server session's journal."""
        return self.served.journal

    def stop(self) -> None:
        """Stop listening, cancel every request and end the model thread."""
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.served.stop()


def start(options: ServeOptions, progress=None, timeout_s: float = 120) -> Handle:
    """Start the server on a thread (port 0: any free port); returns once listening."""
    import uvicorn

    served = prepare(options, progress)
    server = uvicorn.Server(_config(served, options))
    server.install_signal_handlers = lambda: None  # not the main thread
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [served.socket]}, name="serve-http", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            served.stop()
            raise SettingsError(f"the server could not listen on {options.host}:{options.port}")
        time.sleep(0.02)
    return Handle(served, server, thread)
