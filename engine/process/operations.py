"""The engine process's operations: one frozen dataclass each, sent across the pipe
as themselves (pickled) inside a `Request`. The worker looks up an operation's
handler by its class in one table that a test checks against OPERATIONS, so an
operation it does not know cannot be sent: there is no name to misspell.

Load, Generate, Inspect, Lab and Read are requests a person waits on (each answered with
records); Cancel and Shutdown are handled as they arrive.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.inside.inspect_request import InspectRequest
from engine.lab import LabParams
from engine.reading.request import ReadRequest
from engine.run.continuation import Continuation
from engine.run.settings import SamplingSettings

Prompt = str | list[dict]  # a user message, or a whole conversation of {role, content}


@dataclass(frozen=True)
class Load:
    """Load a model (fetching or converting it first) without running it."""

    model: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never printed
    prefer: str | None = None  # auto | speed | memory; None: the engine's current choice


@dataclass(frozen=True)
class Generate:
    """One generation, streamed as records; a `continuation` branches an answer."""

    prompt: Prompt
    settings: SamplingSettings
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    prefer: str | None = None
    continuation: Continuation | None = None


@dataclass(frozen=True)
class Inspect:
    """Look inside a local model at one step (engine/inside/inspect_request.py)."""

    prompt: Prompt
    settings: SamplingSettings
    request: InspectRequest
    model: str | None = None
    prefer: str | None = None


@dataclass(frozen=True)
class Lab:
    """Run one lab experiment (engine.lab's parameter dataclasses) on a local model."""

    params: LabParams
    prompt: Prompt
    settings: SamplingSettings
    model: str | None = None
    prefer: str | None = "speed"  # the lab measures the fast path


@dataclass(frozen=True)
class Read:
    """Read a given text through the model (engine/reading), streamed as records."""

    request: ReadRequest
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    prefer: str | None = None


@dataclass(frozen=True)
class Cancel:
    """Ask request `target` to stop (between tokens, or once its pass is done)."""

    target: int


@dataclass(frozen=True)
class Shutdown:
    """End the engine process."""


Operation = Load | Generate | Inspect | Lab | Read | Cancel | Shutdown
OPERATIONS = (Load, Generate, Inspect, Lab, Read, Cancel, Shutdown)
WORK = (Load, Generate, Inspect, Lab, Read)  # queued and answered with records


@dataclass(frozen=True)
class Request:
    """One operation and the id its replies carry (0 for Cancel and Shutdown)."""

    id: int
    op: Operation

    def __post_init__(self):
        if not isinstance(self.op, OPERATIONS):
            raise TypeError(f"not an engine operation: {type(self.op).__name__}")


__all__ = [
    "OPERATIONS",
    "WORK",
    "Cancel",
    "Generate",
    "Inspect",
    "Lab",
    "Load",
    "Operation",
    "Read",
    "Request",
    "Shutdown",
]
