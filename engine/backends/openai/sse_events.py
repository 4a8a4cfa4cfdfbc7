"""Server-Sent Events as the format defines them (WHATWG HTML, "event stream
interpretation"), from a stream of bytes: nothing here knows about HTTP,
threads or OpenAI.

Lines end in CRLF, LF or CR (a CR at the end of one chunk waits for the next,
which may start with its LF). A line starting with `:` is a comment; otherwise
`field: value` (one space after the colon dropped; a line without a colon is a
field with an empty value). `data` lines accumulate, joined with `\\n`; `event`
names the event's type (`message` when absent); `id` sets the last event id
(kept across events, ignored if it holds a NUL); `retry` takes digits only;
other fields are ignored. A blank line dispatches the event, if it has data.
One departure: when the stream ends after a complete line but before the blank
line, the pending event is still dispatched (servers that end with
`data: [DONE]\\n` mean it); a stream cut inside a line is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from engine.display.units import binary_size
from engine.errors import ServerError


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its type, its data (lines joined by `\\n`), the last
    event id seen so far and the reconnection time the server asked for."""

    data: str
    event: str = "message"
    id: str = ""
    retry_ms: int | None = None


def too_large(max_bytes: int) -> ServerError:
    """The error for an event (or line) over `max_bytes`."""
    return ServerError(
        f"the server sent one event of more than {binary_size(max_bytes)} and the "
        "request was stopped; the partial answer is kept"
    )


def split_lines(chunks: Iterable[bytes], max_bytes: int) -> Iterator[str]:
    """The lines of a byte stream (CRLF, LF or CR endings), decoded with bad UTF-8
    replaced, none over `max_bytes`.

    Raises:
        ServerError: a line longer than `max_bytes`, or a last line cut off by
            the end of the stream.
    """
    buf = bytearray()
    skip_lf = False  # the last chunk ended in CR: a leading LF belongs to it
    for chunk in chunks:
        if skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        skip_lf = False
        clean = len(buf)  # what is left in `buf` holds no line ending: not searched again
        buf += chunk
        start = 0
        while True:
            cr, lf = buf.find(b"\r", max(start, clean)), buf.find(b"\n", max(start, clean))
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                break
            end = min(ends)
            yield bytes(buf[start:end]).decode("utf-8", "replace")
            if buf[end] == 0x0D and end + 1 == len(buf):
                skip_lf, start = True, end + 1
            elif buf[end] == 0x0D and buf[end + 1] == 0x0A:
                start = end + 2
            else:
                start = end + 1
        del buf[:start]
        if len(buf) > max_bytes:
            raise too_large(max_bytes)
    if buf:  # a line without its end: the connection was cut inside it
        raise ServerError(
            "the server closed the connection mid-answer (inside an event); the partial "
            "answer is kept"
        )


class EventParser:
    """Feed lines one at a time; `feed` returns the event a blank line dispatches."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.last_id = ""
        self.retry_ms: int | None = None
        self._data: list[str] = []
        self._size = 0
        self._type = ""

    def feed(self, line: str) -> SSEEvent | None:
        """Take one line (without its ending); the event it dispatches, if any.

        Raises:
            ServerError: the event's data grew over `max_bytes`.
        """
        if not line:
            return self.dispatch()
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self.max_bytes:
                raise too_large(self.max_bytes)
        elif field == "event":
            self._type = value
        elif field == "id" and "\0" not in value:
            self.last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def dispatch(self) -> SSEEvent | None:
        """End the pending event: it, if it has data; the buffers start afresh."""
        data, kind = self._data, self._type
        self._data, self._size, self._type = [], 0, ""
        if not data:
            return None
        return SSEEvent("\n".join(data), kind or "message", self.last_id, self.retry_ms)


def iter_events(chunks: Iterable[bytes], max_bytes: int) -> Iterator[SSEEvent]:
    """The events of an SSE byte stream.

    Raises:
        ServerError: a line or an event over `max_bytes`, or a stream cut inside a line.
    """
    parser = EventParser(max_bytes)
    for line in split_lines(chunks, max_bytes):
        if (event := parser.feed(line)) is not None:
            yield event
    if (event := parser.dispatch()) is not None:
        yield event
