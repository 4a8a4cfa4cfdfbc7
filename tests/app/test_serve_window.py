"""Server ▸ Serve on port… and Follow requests: the window serves its model from a child
process, and a streamed request from the official `openai` client appears in the
playground through the session, with exactly the tokens and log-probabilities the
client received; Stop serving ends the child. The dialog's rules and a server that
exits unasked are checked without a model."""

from __future__ import annotations

import os
import re
import socket
import threading
from pathlib import Path

import openai
import pytest
from PySide6.QtCore import QProcess

from app.serve.dialog import ServeChoice, problem
from app.serve.feed import events_url
from app.serve.process import ServeProcess, port_taken

SERVE_MS = 120_000
MSGS = [{"role": "user", "content": "Say hi"}]


def _chat(url: str, model: str, out: dict) -> None:
    """One streamed chat request; the entries the client received go in out["got"]."""
    try:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
        stream = client.chat.completions.create(
            model=model, messages=MSGS, max_tokens=5, temperature=0, logprobs=True,
            top_logprobs=3, stream=True,
        )  # fmt: skip
        out["got"] = [e for c in stream if c.choices and c.choices[0].logprobs
                      for e in c.choices[0].logprobs.content]  # fmt: skip
    except Exception as e:  # noqa: BLE001 - said by the test
        out["error"] = e


def test_serve_follow_a_request_then_stop(qtbot, window):
    serving = window.serving
    with socket.socket() as taken:  # a port another program holds: said at once, not served
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert not serving.start(ServeChoice("127.0.0.1", taken.getsockname()[1]))
        assert "is taken by another program" in window.banner.text()
        assert not serving.process.running

    serving.actions["follow"].setChecked(True)  # before serving: it follows once listening
    dialog = serving.open_dialog()
    assert dialog.host.text() == "127.0.0.1" and dialog.port.value() == 8080
    dialog.port.setValue(0)  # any free port
    dialog.accept()
    qtbot.waitUntil(lambda: serving.url is not None, timeout=SERVE_MS)
    url = serving.url
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    name = window.model_record.name
    assert serving.note.text() == f"Serving {name} on {url} · following requests"
    assert not serving.actions["serve"].isEnabled() and serving.actions["copy"].isEnabled()
    qtbot.waitUntil(lambda: serving.following.subscribed, timeout=30_000)

    batches = []
    window.model.tokens_added.connect(lambda records: batches.append(len(records)))
    out = {}
    client = threading.Thread(target=_chat, args=(url, name, out))
    client.start()
    qtbot.waitUntil(lambda: not client.is_alive(), timeout=SERVE_MS)
    assert "error" not in out, out.get("error")
    qtbot.waitUntil(lambda: window.state.done is not None, timeout=30_000)

    state, got = window.state, out["got"]
    assert state.prompt == "Say hi" and state.sent == MSGS
    assert state.settings.max_tokens == 5 and state.settings.temperature == 0
    tokens = [t for t in state.tokens if not t.eos]
    assert [t.text for t in tokens] == [e.token for e in got] and len(got) >= 1
    for t, e in zip(tokens, got, strict=True):
        assert abs(t.logprob - e.logprob) < 1e-5
        assert [c.token_id for c in t.top[:3]] == [c.id for c in e.top_logprobs]
    assert sum(batches) == len(state.tokens)  # they arrived through the session, as a run's
    assert state.done.text == "".join(e.token for e in got)
    assert state.model.name == name and state.run_id
    label = window.session.guest.line  # a guest in the Server's lane, its line above it
    assert label.startswith("Request from 127.0.0.1:") and "OpenAI/Python" in label
    assert label.endswith(". Prompt: Say hi") and window.session.guest.source == "Server"
    assert "Continue from here" in window.viewing_label.text()
    # the server journaled it in the same data folder: History lists it
    qtbot.waitUntil(
        lambda: window.session.history.find_run(state.run_id)[1] is not None, timeout=10_000
    )

    proc = serving.process.proc
    pid = proc.processId()
    serving.actions["stop"].trigger()
    qtbot.waitUntil(lambda: proc.state() == QProcess.NotRunning, timeout=15_000)
    assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
    assert serving.url is None and not serving.note.isVisible()
    assert not serving.following.active and serving.actions["serve"].isEnabled()
    assert window.state is state and state.done is not None  # the request stays on screen

    # closing the window (File ▸ Quit closes every window) ends a server still running
    assert serving.start(ServeChoice("127.0.0.1", 0))
    qtbot.waitUntil(lambda: serving.url is not None, timeout=SERVE_MS)
    proc = serving.process.proc
    window.close()
    assert proc.state() == QProcess.NotRunning


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_server_that_exits_says_its_last_line(qtbot):
    proc = ServeProcess()
    with qtbot.waitSignal(proc.stopped, timeout=60_000) as said:
        proc.start("/nonexistent/model-folder", "127.0.0.1", 0, None)
    why = said.args[0]
    assert re.match(r"The server stopped \(exit code [12]\): logitscope: error: model '/nonex", why)
    assert "not found" in why and "Traceback" not in why
    assert proc.url is None and not proc.running


@pytest.mark.parametrize(
    ("choice", "says"),
    [
        (ServeChoice("127.0.0.1", 8080), None),
        (ServeChoice("0.0.0.0", 8080), "name the environment variable"),
        (ServeChoice("0.0.0.0", 8080, "NOT A NAME"), "is not an environment variable's name"),
        (ServeChoice("0.0.0.0", 8080, "LOGITSCOPE_TEST_UNSET_KEY"), "is not set"),
        (ServeChoice("0.0.0.0", 8080, "LOGITSCOPE_TEST_KEY"), None),
        (ServeChoice("", 8080), "Give the address"),
    ],
)
def test_beyond_the_loopback_a_key_variable_is_required(monkeypatch, choice, says):
    monkeypatch.setenv("LOGITSCOPE_TEST_KEY", "k3y")
    monkeypatch.delenv("LOGITSCOPE_TEST_UNSET_KEY", raising=False)
    why = problem(choice)
    assert (why is None) if says is None else (says in why)
    if choice.key_env == "LOGITSCOPE_TEST_KEY":
        assert choice.api_key() == "k3y"


def test_the_feed_is_reached_over_the_loopback():
    assert events_url("http://0.0.0.0:8080/v1") == "http://127.0.0.1:8080/logitscope/events"
    assert events_url("http://127.0.0.1:9/v1/") == "http://127.0.0.1:9/logitscope/events"
    assert not port_taken("127.0.0.1", 0)
    assert os.environ.get("QT_QPA_PLATFORM") == "offscreen"


def _tok(step: int, text: str) -> dict:
    from engine.run.records import TokenRecord, to_dict

    return to_dict(TokenRecord(step, 7, text, -0.5, 0.6, -0.5, (), (), 1.0, 1.0, 0.1, 0.1, 9))


def _done(text: str, n: int) -> dict:
    from engine.run.records import DoneRecord, to_dict

    return to_dict(DoneRecord("length", text, 5, n, 0.1, 50.0, 9.0, None, None, 8192, None, 1.0))


def _started(rid: str, prompt="hello") -> dict:
    client = {"address": "10.0.0.2:5000", "user_agent": "curl/8", "route": "/v1/completions"}
    return {"kind": "started", "request_id": rid, "run_id": f"run-{rid}", "prompt": prompt,
            "settings": {"temperature": 0.5, "max_tokens": 2, "server": {}}, "client": client,
            "model": None}  # fmt: skip


def test_one_request_at_a_time_and_never_over_the_persons_run(qtbot):
    """A second request while one is on screen, and one while the person's own run
    goes on, are left to History with a notice; a request the person takes off the
    screen stops drawing; tokens go to the followed run only."""
    import queue as queue_module

    from app.core.session_signals import SessionSignals
    from app.serve.follow import Following, FollowUi

    model, notices, busy = SessionSignals(), [], [False]
    ui = FollowUi(lambda: busy[0], notices.append, lambda: None)
    following = Following(model, ui)

    class Reader:
        queue = queue_module.Queue()

    def feed(*events):
        for e in events:
            Reader.queue.put(("event", e))
        following.drain()

    following.reader = Reader()
    rec = lambda rid, d: {"kind": "record", "request_id": rid, "run_id": f"run-{rid}", "record": d}  # noqa: E731, E501
    feed(_started("a"), rec("a", _tok(0, "Hi")), _started("b"), rec("b", _tok(0, "No")))
    state = model.session.shown
    assert state.prompt == "hello" and state.settings.temperature == 0.5
    assert state.run_id == "run-a" and [t.text for t in state.tokens] == ["Hi"]
    assert model.session.guest.line == "Request from 10.0.0.2:5000 · curl/8. Prompt: hello"
    assert "another request is on screen" in notices[-1]
    feed(
        rec("a", _tok(1, "!")),
        rec("a", _done("Hi!", 2)),
        {"kind": "ended", "request_id": "a", "run_id": "run-a"},
    )
    assert state.text == "Hi!" and state.done.generated_tokens == 2
    busy[0] = True  # the person's own run: the next request is not shown
    feed(_started("c"), rec("c", _tok(0, "x")))
    assert model.session.shown is state and "while your run goes on" in notices[-1]
    busy[0] = False
    feed(_started("d"))
    followed = model.session.shown
    model.show(type(state)())  # the person puts another run on screen
    feed(rec("d", _tok(0, "late")))
    assert followed.tokens == [] and model.session.shown.tokens == []
    assert "goes on off screen" in notices[-1]


def test_the_frozen_app_serves_through_its_own_binary(monkeypatch):
    import sys

    from app.serve.process import serve_command

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert serve_command("m", "127.0.0.1", 8080, None)[:2] == ["--run-cli", "serve"]
    monkeypatch.delattr(sys, "frozen")
    assert serve_command("m", "127.0.0.1", 8080, "K")[:3] == ["-m", "engine", "serve"]


def test_run_cli_dispatches_to_the_command_line(capsys):
    import pytest

    from app.main import main

    with pytest.raises(SystemExit) as e:  # argparse's refusal: the CLI's own exit status
        main(["logitscope-app", "--run-cli", "serve", "--port", "x"])
    assert e.value.code == 2
    assert "logitscope serve: error: argument --port" in capsys.readouterr().err
