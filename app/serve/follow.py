"""Follow requests: each request the server answers is shown live in the playground.

A request that starts becomes a new RunState (its prompt, settings and model) put on
screen through the session's own methods (`view`, `set_prefill`, `add_tokens`,
`finish`), exactly as the window's own runs stream: the answer is shaded as it
arrives and every chart follows. It is a guest (app/session/guest.py): shown in a lane
of its own, the "Server", with the request's own conversation and its own settings
(the charts mark the temperature it ran at), never under the person's conversation,
which the next Run continues. One request is shown at a time: while one streams,
or while the person's own run does, the next is left to History with a notice. If
the person puts something else on screen, the request goes on (and is journaled by
the server) but stops drawing here.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer

from app.serve.feed import FeedReader
from app.session.conversation import Conversation
from app.session.guest import FROM_SERVER
from app.session.run_state import RunState
from app.session.session import Session
from engine.run.records import record_from_dict
from engine.run.settings import SamplingSettings

FRAME_MS = 33  # ~30 Hz, as the engine bridge
MAX_PER_FRAME = 512  # events handled per frame


@dataclass(frozen=True)
class FollowUi:
    """What following needs from the window: whether the person's own run is going, a
    short notice, and History's refresh after a request."""

    busy: Callable[[], bool]
    notice: Callable[[str], None]
    request_ended: Callable[[], None]


def describe(started: dict, prompt: str = "") -> str:
    """The line above a followed answer: "Request from 127.0.0.1:5123 · OpenAI/Python 1.2"
    (the client's user agent), then the start of its prompt (the box shows the person's)."""
    client = started.get("client") or {}
    agent = (client.get("user_agent") or "no user agent")[:80]
    who = f"Request from {client.get('address', 'unknown')} · {agent}"
    said = " ".join(prompt.split())
    return f"{who}. Prompt: {said[:200]}{'…' if len(said) > 200 else ''}" if said else who


def state_of(started: dict) -> RunState:
    """A followed request's RunState: the prompt (a chat's last message, the turns
    before it as what was sent), its settings and the server's model."""
    prompt = started.get("prompt")
    chat = isinstance(prompt, list)
    text = (prompt[-1].get("content", "") if prompt else "") if chat else str(prompt or "")
    model = started.get("model")
    return RunState(
        prompt=text,
        settings=SamplingSettings.from_dict(started.get("settings") or {}),
        model=record_from_dict(model) if model else None,
        sent=prompt if chat else None,
    )


def request_conversation(state: RunState) -> tuple[Conversation | None, int | None]:
    """A chat request's own conversation (its earlier messages, then this run) and the
    run's turn in it; (None, None) for a completion."""
    if not isinstance(state.sent, list):
        return None, None
    conv = Conversation.from_messages(None, state.sent[:-1])
    turn = len(conv)
    conv.add_run(turn, state.prompt, state)
    return conv, turn


class Following(QObject):
    """Reads a server's feed and shows its requests in the session `model`
    (SessionSignals) while started."""

    def __init__(self, model, ui: FollowUi, parent=None):
        super().__init__(parent)
        self.model, self.session, self.ui = model, model.session, ui
        self.reader: FeedReader | None = None
        self.request_id: str | None = None  # the request shown
        self.run_id: str | None = None  # its run (a routed request has two, one after the other)
        self.state: RunState | None = None
        self.shown_requests = 0  # requests put on screen since started
        self.subscribed = False  # the server acknowledged this follower
        self._said_error = False
        self._timer = QTimer(self)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self.drain)

    @property
    def active(self) -> bool:
        return self.reader is not None

    def start(self, base_url: str, api_key: str | None) -> None:
        """Follow the server at `base_url` (http://HOST:PORT/v1)."""
        self.stop()
        self.reader = FeedReader(base_url, api_key)
        self.reader.start()
        self._timer.start()

    def stop(self) -> None:
        """Stop following; a request on screen keeps what arrived."""
        if self.reader is not None:
            self.reader.close()
        self.reader, self._said_error, self.subscribed = None, False, False
        self._timer.stop()
        self._end_request()

    # -- what arrives --------------------------------------------------------------------
    def drain(self) -> None:
        """Handle what the feed brought since the last frame (tokens in one batch)."""
        reader, tokens = self.reader, []
        for _ in range(MAX_PER_FRAME):
            if reader is None:
                break
            try:
                kind, value = reader.queue.get_nowait()
            except queue.Empty:
                break
            if kind == "error":
                self._flush(tokens)
                self._on_error(value)
                continue
            self._said_error = False
            if value.get("kind") == "record" and self._ours(value):
                record = record_from_dict(value["record"])
                if record.type == "token":
                    tokens.append(record)
                    continue
                self._flush(tokens)
                self._on_record(record)
                continue
            self._flush(tokens)
            self._on_event(value)
        self._flush(tokens)

    def _on_error(self, message: str) -> None:
        if not self._said_error:
            self.ui.notice(f"Follow requests: {message}; trying again")
            self._said_error = True

    def _on_event(self, event: dict) -> None:
        kind = event.get("kind")
        if kind == "subscribed":
            self.subscribed = True
            self.ui.notice(f"Following the requests to {event.get('model', 'the server')}")
        elif kind == "started":
            self._on_started(event)
        elif kind == "ended" and self._ours(event):
            end, state = event.get("record"), self.state
            unfinished = state is not None and state.done is None and state.error is None
            if unfinished and end and self._on_screen():  # no done record came (cancelled)
                self.model.finish(record_from_dict(end))
            self._end_request()
            self.ui.request_ended()
        elif kind == "ended":
            self.ui.request_ended()  # another request's run is in History now
        elif kind == "dropped":
            self.ui.notice(f"Follow requests fell behind: {event.get('reason', '')}")

    def _on_started(self, event: dict) -> None:
        who = describe(event)
        if self.ui.busy():
            self.ui.notice(f"{who} is not shown while your run goes on; History has it")
            return
        if self.request_id is not None:
            self.ui.notice(f"{who} is not shown: another request is on screen; History has it")
            return
        state = state_of(event)
        conversation, turn = request_conversation(state)
        line = describe(event, state.prompt)
        self.model.view(state, FROM_SERVER, line, conversation=conversation, turn=turn)
        Session.name_run(state, event.get("run_id"))
        self.request_id, self.run_id = event.get("request_id"), event.get("run_id")
        self.state = state
        self.shown_requests += 1

    def _on_record(self, record) -> None:
        if not self._on_screen():
            return
        if record.type == "prefill":
            self.model.set_prefill(record)
        elif record.type in ("done", "error"):
            self.model.finish(record)

    def _flush(self, tokens: list) -> None:
        if tokens and self._on_screen():
            self.model.add_tokens(list(tokens))
        tokens.clear()

    # -- which request -------------------------------------------------------------------
    def _ours(self, event: dict) -> bool:
        """The event is of the run on screen (a routed request's small and large attempts
        share the request id: each is followed as its own run)."""
        if self.request_id is None or event.get("request_id") != self.request_id:
            return False
        return event.get("run_id") == self.run_id

    def _on_screen(self) -> bool:
        """The followed request is still the run on screen (else it stops drawing)."""
        if self.state is not None and self.session.shown is self.state:
            return True
        if self.state is not None:
            self._end_request()
            self.ui.notice("The followed request goes on off screen; History will have it")
        return False

    def _end_request(self) -> None:
        self.request_id, self.run_id, self.state = None, None, None
