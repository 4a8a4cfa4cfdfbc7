"""The SSE reader follows the format: multi-line data, comments, event/id/retry
fields, CRLF, LF and CR line endings (split anywhere across chunks), blank-line
dispatch, bounded lines and events."""

from __future__ import annotations

import pytest

from engine.backends.openai.sse_events import SSEEvent, iter_events, split_lines
from engine.errors import ServerError

BIG = 2**20


def events(*chunks: bytes, max_bytes: int = BIG) -> list[SSEEvent]:
    return list(iter_events(chunks, max_bytes))


def test_multi_line_data_is_joined_with_newlines():
    assert events(b'data: {\ndata:  "a": 1\ndata\ndata: }\n\n') == [
        SSEEvent('{\n "a": 1\n\n}')  # one leading space dropped; `data` alone adds ""
    ]


def test_comments_and_unknown_fields_are_ignored():
    stream = b": keep-alive\n\n:another\nfoo: bar\ndata: x\n: inside\n\n"
    assert events(stream) == [SSEEvent("x")]


def test_event_id_and_retry_fields():
    stream = (
        b"event: delta\nid: 7\nretry: 1500\ndata: a\n\n"
        b"data: b\n\n"  # the id carries over; the type does not
        b"id: 8\x00\nretry: soon\nevent: error\ndata: c\n\n"  # NUL id and non-digit retry ignored
    )
    assert events(stream) == [
        SSEEvent("a", "delta", "7", 1500),
        SSEEvent("b", "message", "7", 1500),
        SSEEvent("c", "error", "7", 1500),
    ]


def test_a_blank_line_without_data_dispatches_nothing():
    assert events(b"event: ping\n\n\n\nid: 3\n\n") == []


@pytest.mark.parametrize("ending", [b"\r\n", b"\n", b"\r"], ids=["CRLF", "LF", "CR"])
def test_every_line_ending(ending):
    stream = ending.join([b"data: one", b"data: two", b"", b": c", b"data: three", b"", b""])
    assert events(stream) == [SSEEvent("one\ntwo"), SSEEvent("three")]


@pytest.mark.parametrize("ending", [b"\r\n", b"\n", b"\r"], ids=["CRLF", "LF", "CR"])
def test_chunks_split_anywhere(ending):
    """Every split of the stream into two chunks, inside CRLF and inside a UTF-8
    character included, gives the same events."""
    stream = ending.join([b"data: \xc3\xa9t\xc3\xa9", b"data: 2", b"", b"data: x", b"", b""])
    want = [SSEEvent("été\n2"), SSEEvent("x")]
    for cut in range(len(stream) + 1):
        assert events(stream[:cut], stream[cut:]) == want, cut
    assert events(*[stream[i : i + 1] for i in range(len(stream))]) == want


def test_a_stream_ending_after_a_complete_line_dispatches_it():
    assert events(b"data: a\n\ndata: [DONE]\n") == [SSEEvent("a"), SSEEvent("[DONE]")]


def test_a_stream_cut_inside_a_line_is_an_error():
    with pytest.raises(ServerError, match="mid-answer"):
        events(b"data: a\n\n", b'data: {"choi')


def test_lines_and_events_are_bounded():
    with pytest.raises(ServerError, match="one event of more than 1 KiB"):
        events(b"data: " + b"x" * 2000, max_bytes=1024)
    with pytest.raises(ServerError, match="one event of more than"):  # many short lines
        events(b"data: xxxxxxxx\n" * 200 + b"\n", max_bytes=1024)


def test_bad_utf8_is_replaced_not_fatal():
    assert list(split_lines([b"a\xff\n"], BIG)) == ["a\ufffd"]
