"""Run a command in a child process and measure its peak memory (RSS).

Memory bounds in tests are a ratio of the same command's peak on a small input,
never wall time: `run_measured` returns the child's exit status, its stderr and its
peak resident set size (from wait4's rusage, so it is that child's alone).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Measured:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_kb: int


def run_measured(
    args, *, stdin=b"", env: dict | None = None, timeout: float = 120, code: str | None = None
) -> Measured:
    """Run `python -m engine *args` (or `python -c code`) with `stdin` (an open file,
    a path or bytes).

    A child still running after `timeout` seconds is killed and the test fails.
    """
    cmd = (
        [sys.executable, "-c", code]
        if code is not None
        else [sys.executable, "-m", "engine", *args]
    )
    full_env = {**os.environ, **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        opened = None
        if isinstance(stdin, bytes):
            opened = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
            opened.write(stdin)
            opened.seek(0)
            stdin = opened
        elif isinstance(stdin, (str, Path)):
            opened = open(stdin, "rb")  # noqa: SIM115
            stdin = opened
        try:
            p = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err, env=full_env, cwd=ROOT)
        finally:
            if opened is not None:
                opened.close()
        try:
            _pid, status, usage = _wait4(p.pid, timeout)
        except TimeoutError:
            p.kill()
            os.wait4(p.pid, 0)
            p.returncode = -9
            raise AssertionError(f"{args} still ran after {timeout} s") from None
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(
            p.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            usage.ru_maxrss,  # KiB on Linux
        )


def _wait4(pid: int, timeout: float):
    import time

    deadline = time.monotonic() + timeout
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            return got, status, usage
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.05)
