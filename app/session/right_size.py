"""Answer with the right-sized model: the playground's cascade, as rules without Qt.

With it on, each turn of the person's conversation is answered by the loaded model (the
small one) first. When that answer ends, one confidence signal of its own tokens
(engine/lab/routing.RUN_SIGNALS: the mean, geometric mean, least or first token
probability, or the first step's negated entropy) is compared with the person's
threshold. At or above it the answer is kept. Below it the larger model (a local one,
or a model on an OpenAI-compatible server) answers the same turn, as a second run of
that turn: the conversation goes on from the large model's answer, and the small one's
stays beside it (the turn's ‹ › arrows, the Branches tree, History).

Both attempts carry a `RouteNote` (the run's `route`), which the line above the answer
says in words ("min token p 0.08 < 0.20: escalated to gemma-3-270m"), and both are
named for the decision in History, the large run naming the small one's id. A large
model that fails, or is stopped before its first token, never loses the turn: the small
answer stays, marked as not escalated, with why.

Which runs are judged: the person's own turns (Run, regenerate, an edited turn) that
ended on their own; not a read, a branch, a sample, the cold-vs-cached A/B, or a run
stopped by the person (a cut answer says nothing about confidence).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.session.run_state import RunState
from engine.lab import routing

DEFAULT_THRESHOLD = 0.2  # min token p: most confident short answers of SmolLM2 are above


@dataclass(frozen=True)
class RightSizing:
    """The person's cascade settings: the model to escalate to, and when."""

    large: str = ""  # the large model's spec: a folder, a .gguf file, a server URL#model
    signal: str = routing.DEFAULT_SIGNAL
    threshold: float = DEFAULT_THRESHOLD

    def checked(self, small: str | None) -> RightSizing:
        """These settings, when a cascade from `small` (the loaded model's spec) can run.

        Raises:
            SettingsError: one sentence saying what to change.
        """
        signal, threshold = routing.check_cascade(
            small or "", self.large, self.signal, self.threshold
        )
        return RightSizing(self.large.strip(), signal, threshold)


@dataclass
class RouteNote:
    """What the cascade did on one turn, on each attempt's RunState (`state.route`)."""

    role: str  # "small": the loaded model's attempt; "large": the escalation
    small: str  # the small model's name
    large: str  # the large model's name (its label until it reports one)
    signal: str
    value: float | None  # the small answer's signal
    threshold: float
    escalated: bool
    reason: str  # "min token p 0.08 < 0.20: escalated"
    partner: RunState | None = None  # the other attempt, once there is one
    failed: str | None = None  # why the large model did not answer (the small one stands)

    def journal_name(self, small_run: str | None) -> str:
        """The run's name in History, as `serve --route` names its runs."""
        if self.role == "small":
            return f"routed: {self.reason}"
        why = self.reason.removesuffix(": escalated")
        return f"escalated from {small_run or 'an unsaved run'}: {why}"


def judged(state: RunState) -> bool:
    """Whether the cascade decides on `state`: a generated answer that ended on its own
    (not stopped, not failed, not a read or a branch) with at least one token."""
    done = state.done
    return (
        done is not None
        and state.error is None
        and done.finish_reason != "cancelled"
        and not state.reading
        and not state.branch
        and bool(state.tokens)
    )


def decide(sizing: RightSizing, state: RunState, small: str, large: str) -> RouteNote:
    """The decision on the small model's finished answer `state` (routing.decide's words)."""
    value = routing.run_signal(sizing.signal, state.tokens)
    escalated, reason = routing.decide(sizing.signal, value, sizing.threshold)
    return RouteNote(
        "small", small, large, sizing.signal, value, sizing.threshold, escalated, reason
    )


def decided(state: RunState, note: RouteNote) -> None:
    """The small attempt `state` carries the cascade's decision on it."""
    state.route = note


def escalated_to(small_state: RunState, large_state: RunState) -> RouteNote:
    """The large attempt `large_state` answers the turn of `small_state`: its note,
    linked both ways with the small one's."""
    small_note = small_state.route
    note = replace(small_note, role="large", escalated=True, partner=small_state, failed=None)
    large_state.route, small_note.partner = note, large_state
    return note


def large_model_named(large_state: RunState, name: str) -> None:
    """The large model reported its name: both attempts' lines say it."""
    note = large_state.route
    if isinstance(note, RouteNote):
        note.large = name
        if note.partner is not None and isinstance(note.partner.route, RouteNote):
            note.partner.route.large = name


def large_failed(small_note: RouteNote, error: str, large_note: RouteNote | None = None) -> None:
    """The large model did not answer: the small answer stands, not escalated, with why
    (on both attempts' notes)."""
    if large_note is not None:
        large_note.failed = error
    small_note.failed = error
    small_note.escalated = False
    small_note.reason = routing.failed(small_note.reason, error)
