"""engine.store.bounded_json: limits checked before json's recursion, files read without hanging."""

from __future__ import annotations

import json
import os
import socket

import pytest

from engine.store import bounded_json
from engine.store.bounded_json import FileRefused, JsonLimitError, loads, read_bounded


def test_plain_json_is_parsed_as_json_does():
    text = '{"a": [1, 2.5, -3e2, "x[{"], "b": {"c": null}}'
    assert loads(text) == json.loads(text)
    assert loads(text.encode("utf-16")) == json.loads(text)


def test_deep_nesting_is_refused_with_the_line_before_recursion():
    text = "{\n" + '"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(JsonLimitError) as e:
        loads(text, what="paths.json")
    assert str(e.value) == (
        "paths.json nests deeper than 64 levels (line 2): "
        "it is damaged or not meant for this program"
    )


def test_nesting_at_the_limit_is_accepted_and_brackets_in_strings_do_not_count():
    assert loads("[" * 64 + "]" * 64) == json.loads("[" * 64 + "]" * 64)
    assert loads('["' + "[" * 1000 + '"]') == ["[" * 1000]
    assert loads(r'["\"[[[[", 1]', max_depth=1) == ['"[[[[', 1]


def test_a_long_number_is_refused_with_the_line():
    with pytest.raises(JsonLimitError) as e:
        loads('{"a": 1,\n"b": ' + "9" * 400 + "}")
    assert str(e.value) == (
        "the JSON holds a number longer than 100 characters (line 2): "
        "it is damaged or not meant for this program"
    )
    assert loads("9" * 100) == int("9" * 100)
    assert loads('"' + "9" * 5000 + '"') == "9" * 5000  # digits in a string are text


def test_a_float_overflowing_to_inf_is_refused():
    with pytest.raises(JsonLimitError) as e:
        loads("[1,\n\n-1e999]")
    assert str(e.value) == (
        "the JSON holds a number too large for a float (line 3): "
        "it is damaged or not meant for this program"
    )


def test_malformed_json_raises_json_decode_error_not_a_limit():
    with pytest.raises(json.JSONDecodeError):
        loads('{"a": ')
    with pytest.raises(json.JSONDecodeError):
        loads('"unterminated [[[[[[[[', max_depth=1)  # brackets inside the open string


def test_read_bounded_reads_a_file_and_refuses_one_over_the_limit(tmp_path):
    p = tmp_path / "a.json"
    p.write_bytes(b"x" * 10)
    assert read_bounded(p, 10, "a.json") == b"x" * 10
    with pytest.raises(FileRefused) as e:
        read_bounded(p, 9, "a.json")
    assert str(e.value) == "a.json is over the limit of 9 bytes: give a smaller file"
    assert e.value.reason == "too_large"


def test_read_bounded_missing(tmp_path):
    with pytest.raises(FileRefused) as e:
        read_bounded(tmp_path / "nope.json", 10, "nope.json")
    assert str(e.value) == "nope.json not found: check the path"
    assert e.value.reason == "missing"


def test_read_bounded_refuses_a_fifo_without_hanging(tmp_path):
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused) as e:
        read_bounded(fifo, 10, "f.json")
    assert str(e.value) == "f.json is not a regular file (a FIFO): give a file"
    assert e.value.reason == "special"


def test_read_bounded_refuses_a_link_to_dev_zero_and_a_socket_and_a_folder(tmp_path):
    link = tmp_path / "z.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(FileRefused) as e:
        read_bounded(link, 10, "z.json")
    assert str(e.value) == "z.json is not a regular file (a character device): give a file"
    sock_path = tmp_path / "s"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock_path))
        with pytest.raises(FileRefused) as e:
            read_bounded(sock_path, 10, "s")
        assert str(e.value) == "s is not a regular file (a socket): give a file"
    finally:
        s.close()
    with pytest.raises(FileRefused) as e:
        read_bounded(tmp_path, 10, "the folder")
    assert str(e.value) == "the folder is not a regular file (a folder): give a file"


def test_read_bounded_never_reads_more_than_the_limit_plus_one(tmp_path, monkeypatch):
    p = tmp_path / "big"
    p.write_bytes(b"y" * 1_000_000)
    asked = []
    real_read, real_fstat = os.read, os.fstat

    def counting_read(fd, n):
        asked.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(bounded_json.os, "read", counting_read)
    with pytest.raises(FileRefused) as e:
        read_bounded(p, 1000, "big")
    assert asked == [] and e.value.reason == "too_large"  # its size said so: nothing read

    def growing(fd):  # a file that grows after its size was read
        info = real_fstat(fd)
        return os.stat_result((*info[:6], 10, *info[7:]))

    monkeypatch.setattr(bounded_json.os, "fstat", growing)
    with pytest.raises(FileRefused) as e:
        read_bounded(p, 1000, "big")
    assert str(e.value) == "big is over the limit of 1,000 bytes: give a smaller file"
    assert sum(asked) == 1001
