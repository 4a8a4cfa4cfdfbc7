"""Standard input is read in chunks up to the text limit: an endless stream is refused
in one sentence at once, without growing (peak RSS against the same command's on a
small input), and a NUL byte is called binary data."""

from __future__ import annotations

import io
import subprocess

import pytest

from engine.cli.args import read_prompt, read_stdin_text
from engine.errors import SettingsError
from engine.reading.request import MAX_TEXT_CHARS
from tests.child_memory import run_measured

CEILING = 3  # an endless input's peak RSS, at most this many times a small input's

COMMANDS = (["read", "-"], ["generate", "--prompt", "-"])
NUL_MESSAGE = (
    "logitscope: error: standard input holds a NUL byte (byte 0): it is binary data, "
    "not a text; give UTF-8 text"
)
OVER_MESSAGE = (
    f"logitscope: error: standard input is over {MAX_TEXT_CHARS:,} characters, the most "
    "read at once: split the text"
)


def _env(tmp_path):
    return {"LOGITSCOPE_DATA_DIR": str(tmp_path / "data")}


def _baseline(args, tmp_path) -> int:
    """The command's peak RSS on a small input refused at the same place (bad UTF-8)."""
    m = run_measured(args, stdin=b"caf\xe9 au lait", env=_env(tmp_path))
    assert m.returncode == 2, m.stderr
    assert "not valid UTF-8 (byte 3)" in m.stderr
    return m.peak_rss_kb


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_dev_zero_is_binary_and_refused_without_growing(args, tmp_path):
    base = _baseline(args, tmp_path)
    m = run_measured(args, stdin="/dev/zero", env=_env(tmp_path))
    assert m.returncode == 2
    assert m.stderr.strip() == NUL_MESSAGE
    assert m.peak_rss_kb < CEILING * base, (m.peak_rss_kb, base)
    assert not (tmp_path / "data" / "sessions").exists() or not any(
        (tmp_path / "data" / "sessions").iterdir()
    )  # nothing journaled


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_an_endless_text_is_refused_at_the_limit_without_growing(args, tmp_path):
    base = _baseline(args, tmp_path)
    endless = subprocess.Popen(["yes", "a line of text"], stdout=subprocess.PIPE)
    try:
        m = run_measured(args, stdin=endless.stdout, env=_env(tmp_path))
    finally:
        endless.kill()
        endless.wait()
        endless.stdout.close()
    assert m.returncode == 2
    assert m.stderr.strip() == OVER_MESSAGE
    assert m.peak_rss_kb < CEILING * base, (m.peak_rss_kb, base)


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_the_limit_counts_characters_not_bytes(monkeypatch):
    _stdin(monkeypatch, ("é" * 10).encode())
    assert read_stdin_text(max_chars=10) == "é" * 10
    _stdin(monkeypatch, ("é" * 11).encode())
    with pytest.raises(SettingsError) as e:
        read_stdin_text(max_chars=10)
    assert str(e.value) == (
        "standard input is over 10 characters, the most read at once: split the text"
    )


def test_text_across_chunks_is_read_whole(monkeypatch):
    text = "ünïcode " * 40_000  # 320,000 characters, multi-byte ones cut across chunks
    _stdin(monkeypatch, text.encode())
    assert read_prompt("-") == text


def test_a_nul_byte_after_the_first_chunk_is_named_with_its_offset(monkeypatch):
    _stdin(monkeypatch, b"x" * 100_000 + b"\x00")
    with pytest.raises(SettingsError) as e:
        read_prompt("-")
    assert str(e.value) == (
        "standard input holds a NUL byte (byte 100000): it is binary data, not a text; "
        "give UTF-8 text"
    )


def test_invalid_utf8_names_its_byte_across_chunks(monkeypatch):
    _stdin(monkeypatch, b"x" * 65_535 + b"\xc3" + b"(")  # a cut 2-byte sequence, then junk
    with pytest.raises(SettingsError) as e:
        read_prompt("-")
    assert str(e.value) == (
        "the prompt on standard input is not valid UTF-8 (byte 65535): save it as UTF-8 text"
    )


def test_ctrl_c_while_standard_input_is_read_stops_the_command(tmp_path):
    import os
    import signal
    import sys
    import time
    from pathlib import Path

    from tests.child_memory import ROOT

    silent = subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE)  # never writes
    env = {**os.environ, **_env(tmp_path)}
    from tests.engine.test_ctrl_c import sigint_as_at_a_terminal

    p = subprocess.Popen(
        [sys.executable, "-m", "engine", "read", "-"],
        stdin=silent.stdout, stderr=subprocess.PIPE, cwd=ROOT, env=env,
        preexec_fn=sigint_as_at_a_terminal,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        wchan, call = Path(f"/proc/{p.pid}/wchan"), Path(f"/proc/{p.pid}/syscall")
        # blocked in read(0, …) on the pipe: standard input itself, not a pipe read at
        # start-up (a helper command's output) that a busy machine lets a poll see first
        while not ("pipe_read" in wchan.read_text() and call.read_text().startswith("0 0x0 ")):
            assert time.monotonic() < deadline and p.poll() is None, "never read stdin"
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        err = p.communicate(timeout=30)[1].decode()
    finally:
        p.kill()
        silent.kill()
        silent.wait()
        silent.stdout.close()
    assert (p.returncode, err) == (130, "logitscope: interrupted\n")
