"""The HTTP/1.1 protocol `logitscope serve` makes each connection with: uvicorn's, with a
deadline for each request's headers, OpenAI's error shape for what h11 cannot parse, and a
lingering close after an error answer to a client that may still be sending (closing at
once with unread bytes would reset the connection, which can discard the answer)."""

from __future__ import annotations

import asyncio
import json
from http import HTTPStatus

# h11 as uvicorn's HTTP/1.1 protocol uses it (uvicorn's dependency, not a declared one)
from uvicorn.protocols.http.h11_impl import H11Protocol, h11

from engine.serve.errors import error_body

HEADER_TIMEOUT_S = 10.0  # a request's headers must arrive within this; else 408, closed
# After an error answer to a client that may still be sending, its bytes are read and
# discarded for at most this long (or until it closes its side), then the connection
# is closed: long enough for a client to read the answer, short enough that a client
# that never stops sending cannot hold the connection.
LINGER_S = 2.0


def _error_response(status: int, message: str, code: str) -> bytes:
    """A whole HTTP/1.1 response with OpenAI's error body, closing the connection."""
    body = json.dumps(error_body(message, "invalid_request_error", code=code)).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _LingeringTransport:
    """The connection's transport as uvicorn's protocol and its request cycles see it:
    its close() is DeadlineProtocol's, which may linger; the rest is the transport's."""

    def __init__(self, transport: asyncio.Transport, protocol: DeadlineProtocol):
        self._transport, self._protocol = transport, protocol

    def close(self) -> None:
        self._protocol.close_connection()

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()

    def write(self, data: bytes) -> None:
        if not self._protocol.lingering:  # after the answer: nothing more (as after close)
            self._transport.write(data)

    def __getattr__(self, name: str):
        return getattr(self._transport, name)


class DeadlineProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's headers, OpenAI's
    error shape for the requests h11 cannot parse, and a lingering close.

    From the connection (or from the first byte of a request after a kept-alive
    answer) a request's headers must arrive within `header_timeout_s`, however
    slowly they trickle; else a client that sent part of them gets 408 in OpenAI's
    shape, one that sent nothing is simply closed.

    Every close of the connection (this class's, uvicorn's after an answer with
    `Connection: close`, its request cycle's) goes through `close_connection()`,
    which lingers when the client may still be sending.
    """

    header_timeout_s = HEADER_TIMEOUT_S
    _header_timer: asyncio.TimerHandle | None = None
    _linger_timer: asyncio.TimerHandle | None = None
    _shutting_down = False

    def connection_made(self, transport) -> None:
        self._socket_transport = transport  # self.transport is its _LingeringTransport
        super().connection_made(_LingeringTransport(transport, self))
        self._expect_headers()

    @property
    def lingering(self) -> bool:
        """The answer is sent and the write side shut: what arrives is discarded."""
        return self._linger_timer is not None

    def data_received(self, data: bytes) -> None:
        if self.lingering:  # the rest of a request already answered: never parsed
            return
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # a request's headers are still coming
            self._expect_headers()
        else:
            self._stop_header_timer()

    def connection_lost(self, exc) -> None:
        self._stop_header_timer()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """The server is stopping: close at once, lingering connections too."""
        self._shutting_down = True
        if self.lingering:
            self._socket_transport.close()
        else:
            super().shutdown()

    def close_connection(self) -> None:
        """Close the connection; when the client may still be sending, linger: shut
        the write side (the client reads what was sent, then EOF), discard what
        arrives, and close once the client closes its side or LINGER_S pass."""
        transport = self._socket_transport
        if self.lingering or transport.is_closing():
            return
        self._stop_header_timer()
        if (
            self._shutting_down
            or not self._peer_may_send()
            or transport.get_protocol() is not self  # upgraded to another protocol
            or not transport.can_write_eof()
        ):
            transport.close()
            return
        self._unset_keepalive_if_required()
        self._linger_timer = self.loop.call_later(LINGER_S, transport.close)
        transport.write_eof()  # after what is still buffered
        transport.resume_reading()  # uvicorn may have paused it; the bytes must be read

    def _peer_may_send(self) -> bool:
        """Whether the client may still be sending: part of a request's headers came,
        its body is not whole, h11 could not parse it, or unparsed bytes wait."""
        state = self.conn.their_state
        return state in (h11.SEND_BODY, h11.ERROR) or bool(self.conn.trailing_data[0])

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what h11 cannot parse, in OpenAI's shape (its own is text)."""
        self._stop_header_timer()
        message = (
            "the request is not valid HTTP/1.1 (a malformed request line, header or Content-Length)"
        )
        self.transport.write(_error_response(400, message, "invalid_http"))
        self.transport.close()

    def _expect_headers(self) -> None:
        if self._header_timer is None and not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0]:  # part of a request came: say why it ends
            message = f"the request's headers did not arrive within {self.header_timeout_s:g} s"
            self.transport.write(_error_response(408, message, "request_timeout"))
        self.transport.close()
