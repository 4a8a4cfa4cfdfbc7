"""Stop reaches a request the bridge has not sent yet. The window shows a run as running
(the bridge busy) the moment its thread starts; the thread sends the request a moment
later. A Stop in between used to reach the client before its request existed and was
lost (seen when a right-sized escalation was stopped on a loaded machine: the large
model answered anyway)."""

from __future__ import annotations

import threading

from app.core.bridge import EngineBridge
from engine.run.records import ErrorRecord
from engine.run.settings import SamplingSettings


class SlowToSendClient:
    """Sends its request only once the test lets it; ends its records when cancelled."""

    def __init__(self):
        self.current = None
        self.cancelled: list[int] = []
        self.send = threading.Event()
        self.stopped = threading.Event()

    def generate(self, *_args, **_kwargs):
        self.send.wait(10)
        self.current = 7  # the request is sent: it is the current one from here

        def records():
            if not self.stopped.wait(10):
                yield ErrorRecord("never cancelled", "settings")

        return records()

    def cancel(self):
        if self.current is not None:
            self.cancelled.append(self.current)
            self.stopped.set()

    def close(self):
        pass


def test_a_stop_before_the_request_is_sent_reaches_it(qtbot):
    client = SlowToSendClient()
    bridge = EngineBridge(client=client, owns_client=False)
    failed = []
    bridge.failed.connect(failed.append)
    assert bridge.generate("hi", SamplingSettings(), None)
    assert bridge.busy and client.current is None
    bridge.cancel()  # Stop, while the thread has not sent the request
    client.send.set()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=15_000)
    assert client.cancelled == [7] and failed == []
    bridge.cleanup()


def test_a_stop_after_the_run_ended_does_not_reach_the_next_one(qtbot):
    client = SlowToSendClient()
    bridge = EngineBridge(client=client, owns_client=False)
    client.send.set()
    bridge.generate("hi", SamplingSettings(), None)
    qtbot.waitUntil(lambda: client.current == 7, timeout=5_000)
    bridge.cancel()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=15_000)
    client.stopped.clear()
    client.current, client.cancelled = None, []
    client.send.clear()
    assert bridge.generate("again", SamplingSettings(), None)  # a new run, not stopped
    client.send.set()
    qtbot.waitUntil(lambda: client.current == 7, timeout=5_000)
    assert client.cancelled == []
    bridge.cancel()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=15_000)
    bridge.cleanup()


def _state(pid: int) -> str:
    """The process's state letter from ps ("T": stopped), "" once it is gone."""
    import subprocess

    got = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return got.stdout.strip()[:1]


def test_closing_during_a_model_load_stops_its_engine_at_once(qtbot, monkeypatch, tiny_model_dir):
    """No Cancel or Shutdown reaches a load (a conversion takes minutes): the window's
    bridge closed while its engine loads stops that engine rather than wait for the
    load. It waited 3 s for its thread, then 3 s for the Shutdown, then killed it."""
    import os
    import signal
    import time

    from engine.process.client import EngineClient
    from engine.process.worker import FAULT_ENV

    monkeypatch.setenv(FAULT_ENV, "load:stop")  # a load that never ends: the engine freezes
    client = EngineClient(load_timeout_s=600)
    bridge = EngineBridge(client=client)  # it owns its client, as the window's does
    assert bridge.load(str(tiny_model_dir))
    qtbot.waitUntil(lambda: client.pid is not None and _state(client.pid) == "T", timeout=60_000)
    pid = client.pid
    try:
        assert bridge.busy and getattr(client, "loading", None) is True
        started = time.monotonic()
        bridge.cleanup()
        took = time.monotonic() - started
        assert client.pid is None and _state(pid) == ""
        assert took < 2.5, took  # ten times what stopping takes; waiting took 6 s
    finally:
        if _state(pid):  # a frozen engine would keep this process from exiting
            os.kill(pid, signal.SIGKILL)
