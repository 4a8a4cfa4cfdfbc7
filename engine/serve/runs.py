"""Every request a run: journaled in the server's session as it decodes.

The run entry holds the prompt (text, or the chat's last message with the turns
before it as its conversation), the settings, the model, and under
`settings["server"]` the client's address, user agent and route (readers of the
settings ignore that key). The API key is never written: it is not in anything a
request hands over. Each record is journaled and emitted to the live listeners.
"""

from __future__ import annotations

import contextlib
import sys

from engine.errors import LogitscopeError
from engine.run.records import to_dict
from engine.run.settings import SamplingSettings
from engine.serve.events import ClientInfo, RequestEvent, emit
from engine.sessions.journal import Journal
from engine.sessions.run_writer import RunWriter


def _warn(message: str) -> None:
    print(f"logitscope serve: the history cannot be written: {message}", file=sys.stderr)


def journal_fields(prompt, conversation_id: str) -> tuple[str, dict | None]:
    """(prompt text, conversation field) of a request's prompt."""
    if isinstance(prompt, str):
        return prompt, None
    last = prompt[-1]["content"] if prompt else ""
    earlier = [dict(m) for m in prompt[:-1]]
    return last, {
        "conversation_id": conversation_id,
        "turn": len(earlier) // 2,
        "messages": earlier,
    }


class ServedRun:
    """One request's run: journaled and emitted record by record."""

    def __init__(
        self,
        journal: Journal | None,
        request_id: str,
        prompt,
        settings: SamplingSettings,
        client: ClientInfo,
        model: dict,
    ):
        self.request_id = request_id
        text, conversation = journal_fields(prompt, request_id)
        fields = settings.to_dict()
        fields["server"] = {
            "client": client.address,
            "user_agent": client.user_agent,
            "route": client.route,
            "request_id": request_id,
        }
        self.writer = RunWriter(journal, text, fields, model, _warn, conversation=conversation)
        if self.writer.run_id is not None:
            agent = client.user_agent.split(" ")[0][:40] or "a client"
            with contextlib.suppress(LogitscopeError):  # a name is a nicety; the run goes on
                journal.meta(self.writer.run_id, name=f"served to {agent} at {client.address}")
        emit(
            RequestEvent("started", request_id, self.run_id, prompt, settings, client, model=model)
        )

    @property
    def run_id(self) -> str | None:
        """The run's id in the journal (None when it cannot be written)."""
        return self.writer.run_id

    def record(self, record) -> None:
        """Journal one record and hand it to the listeners."""
        self.writer.record(record)
        emit(RequestEvent("record", self.request_id, self.run_id, record=record))

    def end(self, outcome: str) -> None:
        """Tell the listeners the request is over ("done", "cancelled", "error")."""
        emit(RequestEvent("ended", self.request_id, self.run_id, outcome=outcome))


def model_dict(record) -> dict:
    """A ModelRecord as the journal's run entry keeps it."""
    return to_dict(record) if record is not None else {}
