"""`logitscope serve` against stalled clients, on a real server on 127.0.0.1 with
short deadlines: 300 connections that never finish their headers, stall in their
body or send nothing are each closed within the deadline (408 in OpenAI's shape for
the first two), a trickling client too, and the server answers on. A client still
sending when its 408 comes reads all of it, then EOF (the server lingers, up to
LINGER_S, instead of resetting the connection)."""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import threading
import time

import httpx
import pytest

from engine.serve.app import BODY_TIMEOUT_S
from engine.serve.protocol import HEADER_TIMEOUT_S, LINGER_S
from engine.serve.server import ServeOptions, start

HEADERS_S, BODY_S = 1.0, 1.5  # this test's deadlines (the defaults are 10 s and 30 s)
SLACK_S = 3.0  # how late a close may come on a loaded two-core machine
PER_KIND = 100  # connections of each kind: 300 in all
PARTIAL_HEADERS = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"
STALLED_BODY = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
)


@pytest.fixture(scope="module")
def server(default_model_path):
    options = ServeOptions(
        model=str(default_model_path),
        port=0,
        max_batch=1,
        max_queue=1,
        header_timeout_s=HEADERS_S,
        body_timeout_s=BODY_S,
    )
    handle = start(options)
    yield handle
    handle.stop()


def test_the_defaults_are_the_named_deadlines():
    options = ServeOptions()
    assert (options.header_timeout_s, options.body_timeout_s) == (
        HEADER_TIMEOUT_S,
        BODY_TIMEOUT_S,
    )
    assert (HEADER_TIMEOUT_S, BODY_TIMEOUT_S) == (10.0, 30.0)


def _connect(port: int, first: bytes) -> tuple[socket.socket, float]:
    """A connection that sent `first`, and when it was opened."""
    opened = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if first:
        s.sendall(first)
    s.setblocking(False)
    return s, opened


def _read_until_closed(socks: dict, deadline: float) -> dict:
    """{key: (bytes received, seconds from its opening until the server closed it)}."""
    sel = selectors.DefaultSelector()
    got = {}
    for key, (s, opened) in socks.items():
        sel.register(s, selectors.EVENT_READ, key)
        got[key] = [b"", None, opened]
    open_ = len(socks)
    while open_ and time.monotonic() < deadline:
        for k, _ in sel.select(timeout=0.1):
            try:
                data = k.fileobj.recv(65536)
            except ConnectionResetError:
                data = b""
            if data:
                got[k.data][0] += data
            else:
                got[k.data][1] = time.monotonic() - got[k.data][2]
                sel.unregister(k.fileobj)
                open_ -= 1
    for s, _ in socks.values():
        s.close()
    return {key: (raw, closed_s) for key, (raw, closed_s, _) in got.items()}


def _error(raw: bytes, status: int) -> dict:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {status} "), raw[:200]
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    err = json.loads(body)["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert (err["type"], err["param"]) == ("invalid_request_error", None)
    return err


def test_stalled_clients_are_answered_408_and_closed_within_the_deadline(server, capfd):
    journal_before = server.journal.path.read_bytes()
    socks = {}
    for i in range(PER_KIND):
        socks[("headers", i)] = _connect(server.port, PARTIAL_HEADERS)
        socks[("body", i)] = _connect(server.port, STALLED_BODY)
        socks[("silent", i)] = _connect(server.port, b"")
    got = _read_until_closed(socks, time.monotonic() + max(HEADERS_S, BODY_S) + SLACK_S)
    still_open = [key for key, (_, closed) in got.items() if closed is None]
    assert still_open == []
    for (kind, _i), (raw, closed_s) in got.items():
        bound = HEADERS_S if kind in ("headers", "silent") else BODY_S
        assert bound - 0.2 <= closed_s <= bound + SLACK_S, (kind, closed_s)
        if kind == "silent":
            assert raw == b""  # nothing was asked: closed without an answer
        elif kind == "headers":
            err = _error(raw, 408)
            assert err["code"] == "request_timeout"
            assert err["message"] == "the request's headers did not arrive within 1 s"
        else:
            err = _error(raw, 408)
            assert err["code"] == "request_timeout"
            assert err["message"] == "the request body did not arrive within 1.5 s"
    assert httpx.get(server.url + "/models", timeout=10).status_code == 200
    assert server.journal.path.read_bytes() == journal_before  # no run was started
    assert "Traceback" not in capfd.readouterr().err


def _trickle(sock: socket.socket, data: bytes, every_s: float, stop: threading.Event):
    for i in range(len(data)):
        if stop.wait(every_s):
            return
        try:
            sock.sendall(data[i : i + 1])
        except OSError:
            return


@pytest.mark.parametrize(
    ("first", "rest", "bound", "message"),
    [
        (b"P", PARTIAL_HEADERS[1:], HEADERS_S, "the request's headers did not arrive within 1 s"),
        (STALLED_BODY, b' "n": 1,' * 20, BODY_S, "the request body did not arrive within 1.5 s"),
    ],
    ids=["headers", "body"],
)  # fmt: skip
def test_a_client_trickling_a_byte_at_a_time_still_meets_the_deadline(
    server, first, rest, bound, message
):
    """Progress does not reset the deadline: it counts from the start, not from the last byte."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(first)
    t0 = time.monotonic()
    stop = threading.Event()
    sender = threading.Thread(target=_trickle, args=(sock, rest, 0.2, stop))
    sender.start()
    try:
        raw = b""
        sock.settimeout(bound + SLACK_S)
        while chunk := sock.recv(65536):
            raw += chunk
        closed_s = time.monotonic() - t0
    finally:
        stop.set()
        sender.join()
        sock.close()
    assert bound - 0.2 <= closed_s <= bound + SLACK_S
    assert _error(raw, 408)["message"] == message


def test_a_kept_alive_connection_gets_the_same_deadline_for_its_next_request(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = b""
    while b"\r\n\r\n" not in first or not first.endswith(b"}"):  # the whole JSON answer
        first += sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200 ")
    t0 = time.monotonic()
    sock.sendall(PARTIAL_HEADERS)
    sock.settimeout(HEADERS_S + SLACK_S)
    raw = b""
    while chunk := sock.recv(65536):
        raw += chunk
    closed_s = time.monotonic() - t0
    sock.close()
    assert HEADERS_S - 0.2 <= closed_s <= HEADERS_S + SLACK_S
    assert _error(raw, 408)["message"] == "the request's headers did not arrive within 1 s"


EAGER = 20  # connections still sending when their 408 comes
EAGER_EVERY_S = 0.0005  # how often each sends a byte: unread bytes wait at most closes
LONG_BODY = STALLED_BODY.replace(b"Content-Length: 100", b"Content-Length: 100000")


def _keep_sending(socks: list[socket.socket], stop: threading.Event) -> None:
    """A byte on each connection every EAGER_EVERY_S, until stopped."""
    while not stop.wait(EAGER_EVERY_S):
        for s in socks:
            with contextlib.suppress(OSError):  # the server has closed, or the buffer is full
                s.send(b"x")


@pytest.mark.parametrize(
    ("first", "message"),
    [
        (PARTIAL_HEADERS, "the request's headers did not arrive within 1 s"),
        (LONG_BODY, "the request body did not arrive within 1.5 s"),
    ],
    ids=["headers", "body"],
)
def test_a_client_still_sending_when_the_408_comes_reads_all_of_it_then_eof(server, first, message):
    """Closing a connection with unread bytes resets it (RST), which can discard the 408
    before the client reads it; the server half-closes after its answer instead and
    discards what still arrives (a lingering close), so the client reads the whole 408,
    then EOF, never ECONNRESET. (Without the lingering close most runs reset some of
    these connections.)"""
    socks = [_connect(server.port, first)[0] for _ in range(EAGER)]
    stop = threading.Event()
    sender = threading.Thread(target=_keep_sending, args=(socks, stop))
    sender.start()
    sel = selectors.DefaultSelector()
    got = {s: b"" for s in socks}
    ends = {}
    try:
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        deadline = time.monotonic() + max(HEADERS_S, BODY_S) + SLACK_S
        while len(ends) < len(socks) and time.monotonic() < deadline:
            for k, _ in sel.select(timeout=0.1):
                try:
                    data = k.fileobj.recv(65536)
                except ConnectionResetError:
                    data = None
                if data:
                    got[k.fileobj] += data
                else:
                    ends[k.fileobj] = "eof" if data == b"" else "reset"
                    sel.unregister(k.fileobj)
    finally:
        stop.set()
        sender.join()
        for s in socks:
            s.close()
    outcomes = [ends.get(s, "open") for s in socks]
    assert outcomes == ["eof"] * len(socks)
    for s in socks:
        err = _error(got[s], 408)
        assert (err["code"], err["message"]) == ("request_timeout", message)


def test_a_client_that_never_stops_sending_is_closed_linger_s_after_its_408(server):
    """The lingering close is bounded: a client that reads the 408 and its EOF but goes
    on sending (and never closes) is cut off LINGER_S later."""
    sock, _ = _connect(server.port, PARTIAL_HEADERS)
    sock.setblocking(True)
    sock.settimeout(HEADERS_S + SLACK_S)
    raw = b""
    while chunk := sock.recv(65536):
        raw += chunk
    eof = time.monotonic()
    assert _error(raw, 408)["message"] == "the request's headers did not arrive within 1 s"
    try:
        with pytest.raises((BrokenPipeError, ConnectionResetError)):
            while time.monotonic() - eof < LINGER_S + SLACK_S:
                sock.sendall(b"x")  # discarded while the server lingers
                time.sleep(0.01)
        cut_s = time.monotonic() - eof
    finally:
        sock.close()
    assert LINGER_S - 0.2 <= cut_s <= LINGER_S + SLACK_S
