"""How a recorded run ended, in one word and a reason: what `logitscope sessions`
prints beside each run, so a failed run never reads as an empty success."""

from __future__ import annotations

from dataclasses import dataclass

REASON_CHARS = 100  # of the reason shown on one line of the listing
UNFINISHED = "no end was recorded (the app or the engine stopped during the run)"


@dataclass(frozen=True)
class Outcome:
    """`status` is ok, cancelled, failed or unfinished; `reason` says why a run
    did not end well (None when it did)."""

    status: str
    reason: str | None = None


def outcome(run) -> Outcome:
    """The outcome of a journaled run (a RunLog): its done record's finish reason,
    else its error record, else unfinished."""
    done, error = run.done, run.error
    if done is not None:
        if done.finish_reason == "error":
            return Outcome("failed", done.error or (error.message if error else "the run failed"))
        if done.finish_reason == "cancelled":
            return Outcome("cancelled", "stopped before the end")
        return Outcome("ok")
    if error is not None:
        return Outcome("failed", error.message)
    return Outcome("unfinished", UNFINISHED)


FINISH_WORDS = {
    "eos": "ended by the model",
    "stop": "ended by the model",  # older logs' name for eos and stop strings
    "stop_string": "ended at a stop string",
    "length": "stopped at max tokens",
    "cancelled": "cancelled by Stop",
    "error": "failed",
    "read": "read to the end",
}


def finish_words(reason: str) -> str:
    """A DoneRecord's finish reason in words ("length" -> "stopped at max tokens")."""
    return FINISH_WORDS.get(reason, reason)


def one_line(text: str, limit: int = REASON_CHARS) -> str:
    """`text` on one line, cut to `limit` characters."""
    words = " ".join(text.split())
    return words if len(words) <= limit else words[: limit - 1] + "…"
