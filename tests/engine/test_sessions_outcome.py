"""`logitscope sessions` says which runs failed and why, instead of `? 0 tok`."""

from __future__ import annotations

import json
import subprocess
import sys

from engine.run.records import DoneRecord, ErrorRecord
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal


def _done(reason: str, error: str | None = None, tokens: int = 3) -> DoneRecord:
    return DoneRecord(
        reason, "abc", 5, tokens, 0.1, 50.0, 20.0, None, None, 2048, 1, 0.3, error=error
    )


def test_failed_runs_are_marked_with_their_reason(private_data_dir):
    journal = Journal.create()
    settings = SamplingSettings(max_tokens=4).to_dict()
    ok = journal.start_run("fine", settings, None)
    journal.record(ok, _done("eos"))
    load = journal.start_run("bad model", settings, None)
    journal.record(load, ErrorRecord("the model folder has no config.json", kind="model"))
    mid = journal.start_run("server died", settings, None)
    journal.record(mid, _done("error", "the server closed the connection mid-answer", 1))
    stopped = journal.start_run("stopped", settings, None)
    journal.record(stopped, _done("cancelled", tokens=2))
    lost = journal.start_run("lost", settings, None)
    journal.close()

    def cli(*args):
        p = subprocess.run(
            [sys.executable, "-m", "engine", "sessions", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        return p.stdout

    listed = {s["session_id"]: s for s in json.loads(cli("--json"))}
    runs = {r["run_id"]: r for r in listed[journal.session_id]["runs"]}
    assert [(runs[r]["status"], runs[r]["error"]) for r in (ok, load, mid, stopped)] == [
        ("ok", None),
        ("failed", "the model folder has no config.json"),
        ("failed", "the server closed the connection mid-answer"),
        ("cancelled", None),
    ]
    assert runs[lost]["status"] == "unfinished" and "no end was recorded" in runs[lost]["error"]

    lines = {ln.split()[0]: ln for ln in cli().splitlines() if ln.startswith("  ")}
    assert lines[ok].endswith("    0 tok   20.0 tok/s  fine")  # no token records here
    assert "(no model)" in lines[load] and "? " not in lines[load]
    assert "FAILED: the model folder has no config.json  bad model" in lines[load]
    assert "FAILED: the server closed the connection mid-answer  server died" in lines[mid]
    assert lines[stopped].endswith("stopped  (cancelled)")
    assert "UNFINISHED: no end was recorded" in lines[lost] and " 0 tok" not in lines[lost]
