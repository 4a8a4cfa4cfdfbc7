"""Reading session journals: the runs and records a session file holds.

The file format is described in `journal.py` (its only writer). Reading checks
every entry against the session schema, skips a torn last line and any
unreadable line, and a file that cannot be read at all is reported and skipped,
never hiding the other sessions.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.run.records import (
    DoneRecord,
    ErrorRecord,
    ModelRecord,
    PrefillRecord,
    TokenRecord,
    record_from_dict,
)
from engine.run.run_result import RunResult
from engine.sessions.run_fields import clean_branch, clean_comparison, clean_conversation
from engine.sessions.session_schema import (
    SchemaError,
    clean_record,
    clean_settings,
    is_session_id,
)
from engine.store.bounded_json import special_kind
from engine.store.paths import data_dir

MAX_SESSION_BYTES = 2**30  # a session file is read whole; a larger one is skipped


def sessions_dir() -> Path:
    """The sessions folder, created if needed.

    Returns:
        `data_dir()/sessions`.

    Raises:
        DataDirError: it cannot be created or is a file (the message names LOGITSCOPE_DATA_DIR).
    """
    from engine.store.paths import _ensure_folder

    return _ensure_folder(data_dir() / "sessions", "sessions folder", "LOGITSCOPE_DATA_DIR")


def new_session_id() -> str:
    """A new session id: the local time and 4 random hex digits.

    Returns:
        `YYYYmmdd-HHMMSS-xxxx`, e.g. "20250131-142501-9f3a".
    """
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@dataclass
class RunLog:
    """One run as the journal holds it: plain dicts, rebuilt into records on demand.

    Attributes:
        run_id: `SESSION/N`.
        started: when it started (seconds since the epoch).
        settings: its SamplingSettings as a dict ({} when unreadable).
        model: its ModelRecord as a dict, if known.
        records: its record dicts, checked against the session schema.
        name: the name given in the history ("" for none).
        deleted: in the bin.
    """

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
    conversation: dict | None = None  # {"conversation_id", "turn", "messages"}
    branch: dict | None = None  # {"parent", "step", "kind", "token_id"?} for a branch

    def folded(self) -> RunResult:
        """The run's records folded as a live run folds them (cached per length).

        Returns:
            The RunResult of its prefill, token, done and error records.
        """
        cache = self.__dict__.setdefault("_parsed", {})
        key = ("fold", len(self.records))
        if key not in cache:
            result = RunResult()
            for r in self.records:
                if r.get("type") in ("token", "done", "error", "prefill"):
                    result.add(record_from_dict(r))
            cache[key] = result
        return cache[key]

    @property
    def tokens(self) -> list[TokenRecord]:
        """The run's token records by step (re-sent steps superseded)."""
        return self.folded().tokens

    @property
    def done(self) -> DoneRecord | None:
        """The run's done record; None if it never finished."""
        return self.folded().done

    @property
    def error(self) -> ErrorRecord | None:
        """The run's error record; None if it had none."""
        return self.folded().error

    @property
    def last_prefill(self) -> PrefillRecord | None:
        """The run's latest prefill record; None if it had none."""
        return self.folded().prefill

    @property
    def model_record(self) -> ModelRecord | None:
        """The run's ModelRecord; None if not known."""
        return record_from_dict(self.model) if self.model else None

    @property
    def title(self) -> str:
        """The run's name, else its prompt on one line, cut to 48 characters."""
        if self.name:
            return self.name
        words = " ".join(self.prompt.split())
        return words if len(words) <= 48 else words[:47] + "…"

    def header(self) -> dict:
        """The run without its records (the `run` journal entry plus meta).

        Returns:
            run_id, session_id, started, prompt, settings, model, name, starred,
            comparison, conversation and branch (not `deleted`).
        """
        return {
            "run_id": self.run_id,
            "session_id": self.session_id,
            "started": self.started,
            "prompt": self.prompt,
            "settings": self.settings,
            "model": self.model,
            "name": self.name,
            "starred": self.starred,
            "comparison": self.comparison,
            "conversation": self.conversation,
            "branch": self.branch,
        }

    @property
    def settings_used(self) -> dict:
        """The settings as the run used them: a sampled run without a seed set records
        the seed it drew (in its done record), so the report can reproduce it."""
        done = self.done
        if self.settings.get("seed") is None and done is not None and done.seed is not None:
            return {**self.settings, "seed": done.seed}
        return self.settings

    @property
    def messages(self) -> list[dict]:
        """The conversation before this run's prompt (empty for a single-turn run)."""
        return list(self.conversation["messages"]) if self.conversation else []


@dataclass
class SessionLog:
    """One session file as read: its runs in file order and how many lines were skipped.

    Attributes:
        path: the journal file.
        started: seconds since the epoch (the file's mtime if it does not say).
        runs: every run, deleted ones included.
        bad_lines: torn or unreadable lines skipped.
        title: the session's own name ("Tour", "Server"), "" when it has none.
    """

    session_id: str
    path: Path
    started: float
    app_version: str = ""
    runs: list[RunLog] = field(default_factory=list)
    title: str = ""  # a lane of its own ("Tour", "Server"); "" for the person's sessions
    bad_lines: int = 0

    @property
    def visible_runs(self) -> list[RunLog]:
        """The runs not in the bin."""
        return [r for r in self.runs if not r.deleted]

    def run(self, run_id: str) -> RunLog | None:
        """A run by id.

        Args:
            run_id: `SESSION/N`.

        Returns:
            The run (even a deleted one), or None.
        """
        return next((r for r in self.runs if r.run_id == run_id), None)


def read_session(path: Path) -> SessionLog:
    """Read one journal file, skipping torn or unreadable lines.

    Args:
        path: the journal file.

    Returns:
        The session (`bad_lines` counts what was skipped).

    Raises:
        OSError: the file cannot be opened at all, is not a regular file (a FIFO, a
            device, a link to one) or is over MAX_SESSION_BYTES (strerror says which).
    """
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO: no wait
    try:
        info = os.fstat(fd)
        kind = special_kind(info.st_mode)  # a FIFO never ends, nor does /dev/zero
        if kind is not None:
            raise OSError(errno.EINVAL, f"not a regular file ({kind}): skipped")
        if info.st_size > MAX_SESSION_BYTES:
            raise OSError(errno.EFBIG, f"over {MAX_SESSION_BYTES:,} bytes: skipped")
    except OSError:
        os.close(fd)
        raise
    session = SessionLog(session_id=path.stem, path=path, started=info.st_mtime)
    runs: dict[str, RunLog] = {}
    with open(fd, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                entry = json.loads(line)
                _apply(session, runs, entry)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                session.bad_lines += 1  # torn last line, or damage: skip, keep reading
    session.runs = list(runs.values())
    return session


def _apply(session: SessionLog, runs: dict, e: dict) -> None:
    """Apply one journal entry, each field checked against the session schema."""
    kind = e["kind"]
    if kind == "session":
        if is_session_id(e.get("session_id")):
            session.session_id = e["session_id"]
        session.started = _number(e.get("started"), session.started)
        session.app_version = str(e.get("app_version", ""))[:40]
        session.title = str(e.get("title") or "")[:40]
    elif kind == "run":
        run_id = e["run_id"]
        if not isinstance(run_id, str) or not isinstance(e["prompt"], str):
            raise SchemaError("bad run entry")
        try:
            settings = clean_settings(e["settings"])
        except SchemaError:
            settings = {}  # the run and its records still show; its settings do not
        model = e.get("model")
        runs[run_id] = RunLog(
            run_id=run_id,
            session_id=session.session_id,
            started=_number(e.get("started"), 0.0),
            prompt=e["prompt"],
            settings=settings,
            model=clean_record(model) if isinstance(model, dict) else None,
            name=str(e.get("name", "")),
            starred=e.get("starred") is True,
            comparison=clean_comparison(e.get("comparison")),
            conversation=_conversation(e.get("conversation")),
            branch=_branch(e.get("branch")),
        )
    elif kind == "record":
        run = runs[e["run_id"]]
        record = clean_record(e["record"])
        if record["type"] == "model" and run.model is None:
            run.model = record
        run.records.append(record)
    elif kind == "meta":
        run = runs[e["run_id"]]
        if isinstance(e.get("name"), str):
            run.name = e["name"]
        for key in ("starred", "deleted"):
            if isinstance(e.get(key), bool):
                setattr(run, key, e[key])


def _conversation(v) -> dict | None:
    try:
        return clean_conversation(v)
    except SchemaError:
        return None  # the run still shows, as a single turn


def _branch(v) -> dict | None:
    try:
        return clean_branch(v)
    except SchemaError:
        return None  # the run still shows, without its parent


def _number(v, default: float) -> float:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v == v and abs(v) < 1e12
    return float(v) if ok else default


def list_sessions(
    folder: Path | None = None, cache: dict | None = None
) -> tuple[list[SessionLog], list[str]]:
    """All readable sessions, newest first, and a message for each unreadable file.

    Args:
        folder: the sessions folder; None: `sessions_dir()`.
        cache: optional dict kept by the caller between calls; files whose size
            and mtime have not changed are not read again, and the entries of this
            folder's files that are gone are dropped.

    Returns:
        (sessions, problems): the sessions sorted by start time, newest first, and
        one "file: why" line per file that could not be read.
    """
    sessions, problems = [], []
    folder = folder or sessions_dir()
    paths = sorted(folder.glob("*.jsonl"), reverse=True)
    if cache is not None:  # a deleted session's entry is not kept
        listed = set(paths)
        for gone in [p for p in cache if p.parent == folder and p not in listed]:
            del cache[gone]
    for path in paths:
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
        except Exception as e:  # noqa: BLE001 - one bad file must never hide the others
            problems.append(f"{path.name}: {type(e).__name__}")
    sessions.sort(key=lambda s: s.started, reverse=True)
    return sessions, problems


def find(ref: str, folder: Path | None = None) -> tuple[SessionLog, RunLog | None]:
    """A session id, or a run id `SESSION/N`, to what it names.

    Args:
        ref: a session id or a run id.
        folder: the sessions folder; None: `sessions_dir()`.

    Returns:
        (session, run): run is None when `ref` is a session id.

    Raises:
        LookupError: no such session, or no such run (or one in the bin).
    """
    sid, _, _n = ref.partition("/")
    path = (folder or sessions_dir()) / f"{sid}.jsonl"
    if not is_session_id(sid) or not path.is_file():
        more = "…" if len(ref) > 60 else ""  # repr: no terminal escape reaches the screen
        raise LookupError(f"no session {ref[:60]!r}{more}: 'logitscope sessions' lists them")
    session = read_session(path)
    if not _n:
        return session, None
    run = session.run(ref)
    if run is None or run.deleted:
        raise LookupError(f"session {sid} has no run {ref}")
    return session, run
