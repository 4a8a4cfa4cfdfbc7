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
