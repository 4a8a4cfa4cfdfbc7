"""An API key never reaches the screen, the journal or an export, whatever a server
echoes (tests/hostile_server.py on 127.0.0.1), and an address holding credentials is
refused without showing them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from engine.backends.base import normalize_base_url, open_backend
from engine.errors import ModelError, ServerError
from engine.run.records import TokenRecord, TopToken
from engine.sessions.export import FORMATS, render
from engine.sessions.journal import read_session
from engine.sessions.sanitize import SCRUBBED, scrub_record
from tests.hostile_server import DONE, HostileServer, event, finish, token

KEY = "sk-test-7f3a9c1e5b2d"


@pytest.fixture
def server():
    s = HostileServer()
    yield s
    s.close()


def logitscope(data_dir, *args) -> subprocess.CompletedProcess:
    """The command line, with the key in $K and its own data folder."""
    env = {**os.environ, "LOGITSCOPE_DATA_DIR": str(data_dir), "K": KEY}
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def generate(data_dir, url, *extra) -> subprocess.CompletedProcess:
    return logitscope(
        data_dir, "generate", "--endpoint", url, "--api-key-env", "K", "--prompt", "q", *extra
    )


def everything_kept(data_dir) -> str:
    """Every journal line and every export format of every run in `data_dir`."""
    out = []
    for path in sorted((data_dir / "sessions").glob("*.jsonl")):
        out.append(path.read_text(encoding="utf-8"))
        session = read_session(path)
        assert session.runs, path
        out += [render(fmt, session, session.runs) for fmt in FORMATS]
    assert out, "no session was written"
    return "\n".join(out)


def echoing(write) -> None:
    """A stream that echoes the key in a token, a candidate and an error event."""
    write(token("a"))
    write(token(f"<{KEY}>", top=[{"token": KEY, "logprob": -0.1}, {"token": "b", "logprob": -2}]))
    write(event({"error": {"message": f"key {KEY} revoked"}}))


def test_a_key_echoed_mid_answer_is_on_no_screen_journal_or_export(server, tmp_path):
    server.models = (200, json.dumps({"data": [{"id": f"m-{KEY}"}]}).encode(), 0.0)
    server.stream = echoing
    for extra in (("--json",), ()):
        p = generate(tmp_path, server.url, "--max-tokens", "5", *extra)
        assert p.returncode == 1, p.stderr
        assert KEY not in p.stdout + p.stderr
        assert f"key {SCRUBBED} revoked" in (p.stdout if extra else p.stderr)
    assert server.requests[-1]["body"]["model"] == f"m-{KEY}"  # the real name is asked for
    kept = everything_kept(tmp_path)
    assert KEY not in kept
    assert f"<{SCRUBBED}>" in kept and f"m-{SCRUBBED}" in kept  # scrubbed, not dropped


def test_a_key_echoed_in_a_401_is_scrubbed(server, tmp_path):
    server.status, server.content_type = 401, "application/json"
    server.error_body = json.dumps({"error": {"message": f"Incorrect API key: {KEY}"}}).encode()
    p = generate(tmp_path, server.url)
    assert p.returncode == 1
    assert f"HTTP 401 (Incorrect API key: {SCRUBBED})" in p.stderr
    assert KEY not in p.stdout + p.stderr
    assert KEY not in everything_kept(tmp_path)
    server.models = (401, server.error_body, 0.0)  # the model list says it too
    p = logitscope(tmp_path, "models", "--endpoint", server.url, "--api-key-env", "K")
    assert p.returncode == 1 and SCRUBBED in p.stderr and KEY not in p.stdout + p.stderr


def test_the_backend_scrubs_errors_it_raises(server):
    server.models = (403, f"forbidden for {KEY}".encode(), 0.0)
    backend = open_backend("openai", api_key=KEY, stall_s=1.0)
    with pytest.raises(ServerError) as caught:
        try:
            backend.load(f"{server.url}#m", lambda *a: None)
        finally:
            backend.close()
    assert f"forbidden for {SCRUBBED}" in str(caught.value) and KEY not in str(caught.value)
    assert caught.value.status == 403  # the same error, its attributes kept


@pytest.mark.parametrize(
    "address",
    [
        "http://user:{key}@127.0.0.1:{port}/v1",
        "http://{key}@127.0.0.1:{port}/v1",
        "user:{key}@127.0.0.1:{port}",
        "http://127.0.0.1:{port}/v1?api_key={key}",
    ],
)
def test_credentials_in_the_address_are_refused_unshown(server, tmp_path, address):
    url = address.format(key=KEY, port=server.httpd.server_address[1])
    p = generate(tmp_path, url)
    assert p.returncode == 2, p.stderr
    assert "user name or password" in p.stderr or "holds a query" in p.stderr
    assert KEY not in p.stdout + p.stderr and p.stderr.count("\n") == 1
    assert server.requests == []  # nothing was sent
    assert not list((tmp_path / "sessions").glob("*.jsonl"))  # nothing was kept
    with pytest.raises(ModelError) as caught:
        open_backend("openai").load(f"{url}#m", lambda *a: None)
    assert KEY not in str(caught.value) and "***" in str(caught.value)


def test_an_at_sign_in_the_path_is_not_a_credential():
    assert normalize_base_url("http://h:8080/api/@team/v1") == "http://h:8080/api/@team/v1"


def test_scrub_record_reaches_every_string_and_drops_the_bytes():
    top = (TopToken(-5, KEY, -0.1, tuple(KEY.encode())), TopToken(7, "b", -2.0, (98,)))
    record = TokenRecord(
        step=0,
        token_id=-5,
        text=f"x{KEY}",
        logprob=-0.1,
        prob=0.9,
        sampled_logprob=None,
        top=top,
        sampled_top=(),
        entropy=0.3,
        sampled_entropy=None,
        elapsed_s=0.1,
        latency_s=0.1,
        context_tokens=3,
        bytes=tuple(f"x{KEY}".encode()),
        oddities=(f"odd {KEY}",),
    )
    clean = scrub_record(record, KEY)
    assert (clean.text, clean.bytes, clean.oddities) == ("x***", None, ("odd ***",))
    assert clean.top == (TopToken(-5, "***", -0.1, None), top[1])  # the other kept as it was
    assert scrub_record(record, None) is record and scrub_record(clean, KEY) is clean
    assert scrub_record(record, "abc") is record  # too short to be a key: not scrubbed


def test_a_server_that_finishes_normally_keeps_its_answer(server, tmp_path):
    """Scrubbing changes nothing when no key is echoed."""
    server.stream = lambda write: [write(e) for e in (token("Hi"), token("!"), finish(), DONE)]
    p = generate(tmp_path, server.url, "--json")
    assert p.returncode == 0, p.stderr
    done = json.loads(p.stdout.splitlines()[-1])
    assert done["type"] == "done" and done["text"] == "Hi!"


def test_a_model_list_echoing_the_key_is_listed_scrubbed(server, tmp_path):
    """`models --endpoint`: a model id holding the key (or terminal escapes) is printed
    scrubbed and clean, as text and as JSON."""
    ids = [f"m-{KEY}", "evil\x1b[2J\x1b]0;pwned\x07"]
    server.models = (200, json.dumps({"data": [{"id": i} for i in ids]}).encode(), 0.0)
    p = logitscope(tmp_path, "models", "--endpoint", server.url, "--api-key-env", "K")
    assert p.returncode == 0, p.stderr
    assert f"m-{SCRUBBED}" in p.stdout and KEY not in p.stdout + p.stderr
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout
    p = logitscope(tmp_path, "models", "--endpoint", server.url, "--api-key-env", "K", "--json")
    assert p.returncode == 0 and KEY not in p.stdout
    assert f"m-{SCRUBBED}" in [m["id"] for m in json.loads(p.stdout)["models"]]
