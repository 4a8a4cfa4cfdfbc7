"""What the engine client's watchdog says when the engine process dies or hangs:
one line that starts "engine died" / "engine hung" and names the phase the request
was in (loading the model, prefill, decode, the inspection's pass, the experiment)."""

from __future__ import annotations

from engine.run.records import ErrorRecord

LOADING = "loading the model"
WORK = {  # what a request does once its model is in memory
    "generate": "prefill",
    "inspect": "the inspection's forward pass",
    "lab": "the experiment",
    "read": "reading the text",
    "load": LOADING,
}


def hung(seconds: float, phase: str) -> ErrorRecord:
    return ErrorRecord(
        f"engine hung during {phase}: the engine process sent nothing for {seconds:g} s "
        "and was stopped; what was already made is kept and a fresh engine starts with "
        "the next request",
        kind="engine_hung",
    )


def died(proc, phase: str) -> ErrorRecord:
    code = proc.exitcode
    if code is None:
        how = "stopped responding"
    elif code < 0:
        how = f"was killed by signal {-code}"
    else:
        how = f"exited with code {code}"
    return ErrorRecord(
        f"engine died during {phase}: the engine process {how}; what was already made "
        "is kept and a fresh engine starts with the next request",
        kind="engine_died",
    )
