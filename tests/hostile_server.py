"""A local OpenAI-style server that misbehaves on purpose, for tests/engine/test_remote_hostile.py.

`server.models` is what `/v1/models` does (a status and body, after an optional
delay, or "CRASH": headers then nothing, as mlx_lm.server does without a Hugging
Face cache, or a function given `write(bytes)` that writes the body);
`server.stream` is a function given `write(bytes)` that writes the chat answer's
body (SSE lines) and may run forever: it stops when the client closes the
connection or the server closes.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODELS = json.dumps({"object": "list", "data": [{"id": "m", "owned_by": "me"}]}).encode()


def event(obj) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def token(text: str, logprob=-0.5, top=None, **entry) -> bytes:
    """One chunk of one token, with logprobs (written as Python's json writes NaN)."""
    e = {
        "token": text,
        "logprob": logprob,
        "bytes": list(text.encode("utf-8", "surrogatepass")),
        "top_logprobs": top if top is not None else [{"token": text, "logprob": logprob}],
        **entry,
    }
    return event(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": text},
                    "finish_reason": None,
                    "logprobs": {"content": [e]},
                }
            ]
        }
    )


def finish(reason="stop", **extra) -> bytes:
    return event({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}], **extra})


DONE = b"data: [DONE]\n\n"


class HostileServer:
    def __init__(self):
        self.models: tuple[int, bytes, float] | str = (200, MODELS, 0.0)
        self.stream: Callable[[Callable[[bytes], None]], None] = lambda write: write(DONE)
        self.status = 200  # of the chat answer
        self.error_body = b""
        self.content_type = "text/html"
        self.server_header = "hostile"  # Python's own (BaseHTTP/…) would mean mlx_lm.server
        self.requests: list[dict] = []
        self.closing = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def version_string(self):
                return outer.server_header

            def do_GET(self):
                outer.requests.append({"path": self.path})
                if callable(outer.models):  # a body written by a function, until it returns
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        outer.models(self._write)
                    return
                if outer.models == "CRASH":  # headers sent, then the handler died
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.close_connection = True
                    return
                status, body, delay = outer.models
                outer.closing.wait(delay)
                self._send(status, body, "application/json")

            def _write(self, data: bytes) -> None:
                if outer.closing.is_set():
                    raise BrokenPipeError
                self.wfile.write(data)
                self.wfile.flush()

            def _send(self, status, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                outer.requests.append({"path": self.path, "body": json.loads(self.rfile.read(n))})
                if outer.status != 200:
                    return self._send(outer.status, outer.error_body, outer.content_type)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

                def write(data: bytes) -> None:
                    if outer.closing.is_set():
                        raise BrokenPipeError
                    self.wfile.write(data)
                    self.wfile.flush()

                try:
                    outer.stream(write)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                except Reset:  # an abortive close: the client sees "connection reset"
                    self.wfile.flush()
                    linger = struct.pack("ii", 1, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class Reset(Exception):
    """Raised by a stream function: the server resets the connection."""


def forever(write, chunk: bytes, pause: float = 0.0) -> None:
    """Write `chunk` until the client leaves."""
    while True:
        write(chunk)
        if pause:
            time.sleep(pause)
