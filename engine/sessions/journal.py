"""The session journal: every run appended, line by line, as it happens.

One JSON Lines file per session under `data_dir()/sessions/`. Each line is one
entry, written with a single `write`, so a crash or kill -9 loses at most the
line being written:

    {"kind": "session", "session_id", "started", "app_version", "title"?}
    {"kind": "run", "run_id", "started", "prompt", "settings", "model",
     "conversation"?, "comparison"?, "branch"?}
    {"kind": "record", "run_id", "record": {...engine record...}}
    {"kind": "meta", "run_id", "name"? , "starred"?, "deleted"?}

`Journal` is the only writer; reading lives in `session_log.py` (re-exported
here, so `engine.sessions.journal` stays the one place callers import sessions from).

Whoever shows the history subscribes with `add_listener(callback)`: after each
write that changes what the history lists (a session or run started, a run ended,
a meta change, an import, a rewrite) every callback gets a `JournalEvent`, on the
thread that wrote. Per-token records notify nobody. Nothing here knows about Qt.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from pathlib import Path

from engine import __version__
from engine.errors import LogitscopeError
from engine.run.records import to_dict
from engine.sessions.journal_events import (  # noqa: F401 - re-exported for callers
    JournalEvent,
    _notify,
    add_listener,
    remove_listener,
)
from engine.sessions.sanitize import sanitize
from engine.sessions.session_log import (  # noqa: F401 - re-exported for callers
    RunLog,
    SessionLog,
    find,
    list_sessions,
    new_session_id,
    read_session,
    sessions_dir,
)
from engine.sessions.session_schema import is_session_id, run_number
from engine.store.bounded_json import loads

ENDING_RECORDS = ("done", "error")  # the record types that end a run
FIRST_LINE_CHARS = 1 << 16  # the session entry is a short line: read no more of it
TITLE_CHARS = 40  # a session's title is cut to this


class JournalError(LogitscopeError):
    """The history could not be written; the message says where and what to do."""


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _thread_lock(path: Path) -> threading.Lock:
    """One lock per journal file in this process, whichever object writes it."""
    key = os.path.realpath(path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


class Journal:
    """The only writer of journal lines; safe across threads and processes.

    Each entry is one `write` of one line to a file opened with O_APPEND, under a
    per-file thread lock and an advisory file lock, so two writers (the window
    and an import, the app and the command line) never interleave. A torn last
    line left by a crash is closed with a newline before the next entry. If the
    file is replaced on disk (the bin emptied), the next write reopens it.

    Args:
        path: the session's journal file (created on the first write).
        session_id: the session's id, the prefix of its run ids.
    """

    def __init__(self, path: Path, session_id: str):
        self.path = Path(path)
        self.session_id = session_id
        self._lock = _thread_lock(self.path)
        self._fd: int | None = None
        self._next_run: int | None = None
        self._known_size = -1  # file size after our last write; another writer changes it

    @classmethod
    def create(cls, folder: Path | None = None, title: str | None = None) -> Journal:
        """Start a new session file and write its `session` entry.

        Args:
            folder: where to put it; None: `sessions_dir()`.
            title: what History calls the session before its first prompt ("Tour",
                "Server": a lane of its own); None: none.

        Returns:
            The journal, named `<new session id>.jsonl`.

        Raises:
            JournalError: the folder cannot be made or written.
        """
        try:
            folder = folder or sessions_dir()
        except LogitscopeError as e:
            raise JournalError(f"the history could not be saved: {e}") from e
        sid = new_session_id()
        journal = cls(Path(folder) / f"{sid}.jsonl", sid)
        head = {"kind": "session", "session_id": sid, "started": time.time()}
        head["app_version"] = __version__
        if title:
            head["title"] = str(title)[:TITLE_CHARS]
        journal._write(head)
        journal._changed("session")
        return journal

    @classmethod
    def open(cls, path: Path) -> Journal:
        """A writer for an existing session file; nothing is written.

        Args:
            path: the journal file.

        Returns:
            The journal, its session id from the file's first entry (else its name).
        """
        path = Path(path)
        sid = path.stem
        try:
            if not _regular(path):  # a FIFO would hang, a link to /dev/zero never end
                return cls(path, sid)
            with open(path, encoding="utf-8", errors="replace") as f:
                first = loads(f.readline(FIRST_LINE_CHARS) or "{}")
            if first.get("kind") == "session" and is_session_id(first.get("session_id")):
                sid = first["session_id"]
        except (OSError, ValueError, AttributeError, RecursionError):
            pass
        return cls(path, sid)

    # -- writing ---------------------------------------------------------------------
    def _open_fd(self) -> int:
        """The append descriptor, reopened if the file was replaced or removed."""
        if self._fd is not None:
            try:
                same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
            except OSError:
                same = False
            if same:
                return self._fd
            os.close(self._fd)
            self._fd = None
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(self.path, flags, 0o644)
        return self._fd

    def _append(self, build) -> None:
        """Append `build()` (bytes, made under the locks) as one write."""
        for _attempt in range(5):
            fd = self._open_fd()
            with _file_lock(fd):
                if os.stat(self.path).st_ino != os.fstat(fd).st_ino:
                    continue  # replaced while we waited for the lock: reopen
                size = os.fstat(fd).st_size
                if self._next_run is None or size != self._known_size:
                    self._next_run = _max_run_number(self.path, self.session_id) + 1
                data = build()
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # a crash left half a line: never glue onto it
                _write_all(fd, data)
                self._known_size = os.fstat(fd).st_size
                return
        raise OSError(f"{self.path} keeps being replaced")

    def _locked_append(self, build) -> None:
        with self._lock:
            try:
                self._append(build)
            except OSError as e:
                raise JournalError(_where(e, self.path.parent)) from e

    def _write(self, entry: dict) -> None:
        data = _line(entry)
        self._locked_append(lambda: data)

    def _changed(self, what: str, run_ids: tuple[str, ...] = ()) -> None:
        _notify(JournalEvent(self.path, self.session_id, what, run_ids))

    def start_run(
        self,
        prompt: str,
        settings: dict,
        model: dict | None = None,
        comparison=None,
        conversation=None,
        branch=None,
    ) -> str:
        """Append a run entry and return its id `SESSION/N` (N unused in the file).

        Args:
            prompt: the run's prompt text.
            settings: its SamplingSettings as a dict.
            model: its ModelRecord as a dict, if known.
            comparison: {"comparison_id", "lane"} when the run is a compare lane.
            conversation: {"conversation_id", "turn", "messages"} when the run
                continues a conversation (`messages`: the turns before `prompt`).
            branch: {"parent", "step", "kind", "token_id"?} when the run branches
                from another run's answer (see run_fields.clean_branch).

        Returns:
            The new run's id.

        Raises:
            JournalError: the file cannot be written.
        """
        entry = {
            "kind": "run",
            "run_id": "",
            "started": time.time(),
            "prompt": prompt,
            "settings": settings,
            "model": model,
        }
        if comparison:
            entry["comparison"] = comparison
        if conversation:
            entry["conversation"] = conversation
        if branch:
            entry["branch"] = branch

        def build() -> bytes:  # the number is chosen under the file lock
            """The run entry's line, its number taken under the file lock."""
            entry["run_id"] = f"{self.session_id}/{self._next_run}"
            self._next_run += 1
            return _line(entry)

        self._locked_append(build)
        self._changed("run", (entry["run_id"],))
        return entry["run_id"]

    def record(self, run_id: str, record) -> None:
        """Append one engine record to a run.

        A record object is first brought into the schema's ranges (see sanitize.py);
        a dict is written as it is.

        Args:
            run_id: the run's id, from `start_run`.
            record: an engine record, or a record dict.

        Raises:
            JournalError: the file cannot be written.
        """
        data = record if isinstance(record, dict) else to_dict(sanitize(record))
        self._write({"kind": "record", "run_id": run_id, "record": data})
        if data.get("type") in ENDING_RECORDS:
            self._changed("ended", (run_id,))

    def meta(self, run_id: str, **changes) -> None:
        """Append a meta entry changing how a run is listed.

        Args:
            run_id: the run's id.
            **changes: name (str), starred (bool) and/or deleted (bool).

        Raises:
            JournalError: the file cannot be written.
        """
        self._write({"kind": "meta", "run_id": run_id, **changes})
        self._changed("meta", (run_id,))

    def append_entries(self, entries: list[dict]) -> None:
        """Several entries as one write (an imported run arrives whole or not at all).

        Args:
            entries: journal entries, written as given.

        Raises:
            JournalError: the file cannot be written.
        """
        data = b"".join(_line(e) for e in entries)
        self._locked_append(lambda: data)
        runs = tuple(e["run_id"] for e in entries if e.get("kind") == "run" and "run_id" in e)
        self._changed("import", runs)

    def rewrite(self, keep) -> int:
        """Rewrite the file keeping the lines `keep(entry)` accepts (emptying the bin).

        Written to a temporary file and renamed over the journal under the file
        lock; other writers reopen the new file on their next write. Lines that are
        not a readable JSON object are dropped.

        Args:
            keep: takes one entry (a dict); true keeps its line.

        Returns:
            The number of lines removed.

        Raises:
            JournalError: the file cannot be read or replaced.
        """
        from engine.store.atomic import write_atomic

        with self._lock:
            try:
                fd = self._open_fd()
                with _file_lock(fd):
                    lines = self.path.read_bytes().splitlines(keepends=True)
                    kept = [ln for ln in lines if _keep_line(ln, keep)]
                    write_atomic(self.path, b"".join(kept))
                    self._known_size = -1
            except OSError as e:
                raise JournalError(_where(e, self.path.parent)) from e
        self._changed("rewrite")
        return len(lines) - len(kept)

    def close(self) -> None:
        """Flush the file to disk and close it; a later write reopens it."""
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None


def _line(entry: dict) -> bytes:
    entry = _finite(entry)
    try:
        return (json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n").encode()
    except UnicodeEncodeError:  # a lone surrogate: JSON's \\u escape keeps it readable
        return (json.dumps(entry, ensure_ascii=True, allow_nan=False) + "\n").encode()


def _keep_line(line: bytes, keep) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return False  # torn or damaged: nothing readable is lost by dropping it
    return bool(keep(entry)) if isinstance(entry, dict) else False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@contextlib.contextmanager
def _file_lock(fd: int):
    """An advisory lock on the whole file, against writers in other processes."""
    try:
        import fcntl
    except ImportError:  # Windows: the thread lock and O_APPEND are what we have
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _max_run_number(path: Path, session_id: str) -> int:
    """The largest N of the run ids `SESSION/N` already in the file (0 if none)."""
    best = 0
    try:
        if not _regular(path):
            return 0
        with open(path, "rb") as f:
            for line in f:
                if b'"kind": "run"' not in line and b'"kind":"run"' not in line:
                    continue
                try:
                    n = run_number(json.loads(line).get("run_id"), session_id)
                except (ValueError, AttributeError):
                    continue
                best = max(best, n or 0)
    except OSError:
        pass
    return best


def _regular(path: Path) -> bool:
    """Whether `path` is a regular file (following links); False if it cannot be told."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _where(e: OSError, folder) -> str:
    from engine.store.atomic import describe_os_error

    detail = describe_os_error(e, folder).removeprefix(f"could not write {folder}: ")
    return f"the history could not be saved in {folder} ({detail})"


def _finite(value):
    """JSON has no infinities: a filtered-out logprob (-inf) becomes null."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
