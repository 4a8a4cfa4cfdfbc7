"""A journal writer for crash tests, in a module of its own that imports only the
journal: a forkserver child loads it in milliseconds (forking the test process,
MLX and all, costs far more per kill)."""

from __future__ import annotations

from engine.sessions.journal import Journal


def append_forever(path, records, ack) -> None:
    """Child: journal records through the public API, acknowledging each return.

    Args:
        path: the session file (its first line written by the parent).
        records: token records as dicts, appended in order, run after run.
        ack: a Connection: "ready" once started, then (run_id, step) per append.
    """
    journal = Journal(path, path.stem)
    ack.send("ready")  # started: the kill comes while it writes, not while it forks
    n = 0
    while True:
        run_id = journal.start_run(f"prompt {n}", {"temperature": 0.5}, None)
        for i, rec in enumerate(records):
            journal.record(run_id, {**rec, "step": i})
            ack.send((run_id, i))
        n += 1
