"""The session journal: every run appended, line by line, as it happens.

One JSON Lines file per session under `data_dir()/sessions/`. Each line is one
entry, written with a single `write` and flushed, so a crash or kill -9 loses
at most the line being written:

    {"kind": "session", "session_id", "started", "app_version"}
    {"kind": "run", "run_id", "started", "prompt", "settings", "model"}
    {"kind": "record", "run_id", "record": {...engine record...}}
    {"kind": "meta", "run_id", "name"? , "starred"?, "deleted"?}

Reading skips a torn last line and any unreadable line; a file that cannot be
read at all is reported and skipped, never hiding the other sessions.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine import __version__
from engine.paths import data_dir
from engine.records import (
    DoneRecord,
    ErrorRecord,
    ModelRecord,
    PrefillRecord,
    TokenRecord,
    record_from_dict,
    to_dict,
)


def sessions_dir() -> Path:
    path = data_dir() / "sessions"
    path.mkdir(parents=True, exist_ok=True)
    return path


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@dataclass
class RunLog:
    """One run as the journal holds it: plain dicts, rebuilt into records on demand."""

    run_id: str
    session_id: str
    started: float
    prompt: str
    settings: dict
    model: dict | None = None
    records: list[dict] = field(default_factory=list)
    name: str = ""
    starred: bool = False
    deleted: bool = False
    comparison: dict | None = None  # {"comparison_id", "lane"} for a compare lane

    def typed(self, kind: str) -> list:
        """The run's records of one type, parsed once (history asks on every refresh)."""
        cache = self.__dict__.setdefault("_parsed", {})
        key = (kind, len(self.records))
        if key not in cache:
            cache[key] = [record_from_dict(r) for r in self.records if r.get("type") == kind]
        return cache[key]

    @property
    def tokens(self) -> list[TokenRecord]:
        return self.typed("token")

    @property
    def done(self) -> DoneRecord | None:
        found = self.typed("done")
        return found[-1] if found else None

    @property
    def error(self) -> ErrorRecord | None:
        found = self.typed("error")
        return found[-1] if found else None

    @property
    def last_prefill(self) -> PrefillRecord | None:
        found = self.typed("prefill")
        return found[-1] if found else None

    @property
    def model_record(self) -> ModelRecord | None:
        return record_from_dict(self.model) if self.model else None

    @property
    def title(self) -> str:
        if self.name:
            return self.name
        words = " ".join(self.prompt.split())
        return words if len(words) <= 48 else words[:47] + "…"

    def header(self) -> dict:
        """The run without its records (the `run` journal entry plus meta)."""
        return {
            "run_id": self.run_id, "session_id": self.session_id, "started": self.started,
            "prompt": self.prompt, "settings": self.settings, "model": self.model,
            "name": self.name, "starred": self.starred, "comparison": self.comparison,
        }  # fmt: skip


@dataclass
class SessionLog:
    session_id: str
    path: Path
    started: float
    app_version: str = ""
    runs: list[RunLog] = field(default_factory=list)
    bad_lines: int = 0

    @property
    def visible_runs(self) -> list[RunLog]:
        return [r for r in self.runs if not r.deleted]

    def run(self, run_id: str) -> RunLog | None:
        return next((r for r in self.runs if r.run_id == run_id), None)


class Journal:
    """Appends one session's entries; safe to call from several threads."""

    def __init__(self, path: Path, session_id: str):
        self.path = Path(path)
        self.session_id = session_id
        self._lock = threading.Lock()
        self._file = None
        self._runs = 0

    @classmethod
    def create(cls, folder: Path | None = None) -> Journal:
        sid = new_session_id()
        journal = cls((folder or sessions_dir()) / f"{sid}.jsonl", sid)
        journal._write({"kind": "session", "session_id": sid, "started": time.time(),
                        "app_version": __version__})  # fmt: skip
        return journal

    def _write(self, entry: dict) -> None:
        line = json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n"
        with self._lock:
            if self._file is None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
                if _ends_torn(self.path):  # a crash left half a line: never glue onto it
                    self._file.write("\n")
            self._file.write(line)
            self._file.flush()  # into the OS: survives the process being killed

    def start_run(
        self, prompt: str, settings: dict, model: dict | None = None, comparison=None
    ) -> str:
        """Args: comparison: {"comparison_id", "lane"} when the run is a compare lane."""
        self._runs += 1
        run_id = f"{self.session_id}/{self._runs}"
        entry = {"kind": "run", "run_id": run_id, "started": time.time(),
                 "prompt": prompt, "settings": settings, "model": model}  # fmt: skip
        if comparison:
            entry["comparison"] = comparison
        self._write(entry)
        return run_id

    def record(self, run_id: str, record) -> None:
        data = record if isinstance(record, dict) else to_dict(record)
        self._write({"kind": "record", "run_id": run_id, "record": _finite(data)})

    def meta(self, run_id: str, **changes) -> None:
        self._write({"kind": "meta", "run_id": run_id, **changes})

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                self._file = None


def _ends_torn(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def _finite(value):
    """JSON has no infinities: a filtered-out logprob (-inf) becomes null."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def read_session(path: Path) -> SessionLog:
    """Read one journal file, skipping torn or unreadable lines.

    Raises:
        OSError: the file cannot be opened at all.
    """
    path = Path(path)
    session = SessionLog(session_id=path.stem, path=path, started=path.stat().st_mtime)
    runs: dict[str, RunLog] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                entry = json.loads(line)
                _apply(session, runs, entry)
            except (ValueError, KeyError, TypeError, AttributeError):
                session.bad_lines += 1  # torn last line, or damage: skip, keep reading
    session.runs = list(runs.values())
    return session


def _apply(session: SessionLog, runs: dict, e: dict) -> None:
    kind = e["kind"]
    if kind == "session":
        session.session_id = e["session_id"]
        session.started = e["started"]
        session.app_version = e.get("app_version", "")
    elif kind == "run":
        runs[e["run_id"]] = RunLog(
            run_id=e["run_id"], session_id=session.session_id, started=e["started"],
            prompt=e["prompt"], settings=e["settings"], model=e.get("model"),
            name=e.get("name", ""), starred=bool(e.get("starred", False)),
            comparison=e.get("comparison"),
        )  # fmt: skip
    elif kind == "record":
        run = runs[e["run_id"]]
        record = e["record"]
        if not isinstance(record, dict) or "type" not in record:
            raise ValueError("not a record")
        if record["type"] == "model" and run.model is None:
            run.model = record
        run.records.append(record)
    elif kind == "meta":
        run = runs[e["run_id"]]
        for key in ("name", "starred", "deleted"):
            if key in e:
                setattr(run, key, e[key])


def list_sessions(
    folder: Path | None = None, cache: dict | None = None
) -> tuple[list[SessionLog], list[str]]:
    """All readable sessions, newest first, and a message for each unreadable file.

    Args:
        cache: optional dict kept by the caller between calls; files whose size
            and mtime have not changed are not read again.
    """
    sessions, problems = [], []
    for path in sorted((folder or sessions_dir()).glob("*.jsonl"), reverse=True):
        try:
            stat = path.stat()
            key = (stat.st_size, stat.st_mtime_ns)
            if cache is not None and cache.get(path, (None,))[0] == key:
                sessions.append(cache[path][1])
                continue
            session = read_session(path)
            if cache is not None:
                cache[path] = (key, session)
            sessions.append(session)
        except OSError as e:
            problems.append(f"{path.name}: {e.strerror or e}")
    sessions.sort(key=lambda s: s.started, reverse=True)
    return sessions, problems


def find(ref: str, folder: Path | None = None) -> tuple[SessionLog, RunLog | None]:
    """A session id, or a run id `SESSION/N`, to what it names.

    Raises:
        LookupError: nothing by that name.
    """
    sid, _, _n = ref.partition("/")
    path = (folder or sessions_dir()) / f"{sid}.jsonl"
    if not path.exists():
        raise LookupError(f"no session '{sid}': 'logitscope sessions' lists them")
    session = read_session(path)
    if not _n:
        return session, None
    run = session.run(ref)
    if run is None or run.deleted:
        raise LookupError(f"session {sid} has no run {ref}")
    return session, run
