"""Importing an exported session JSON into the history, adding and never replacing.

The file is checked field by field against the session schema before anything
is written. The session's journal file name comes from a strictly validated id
(or a new one), never from a path in the data. If the session is already in the
history, only the runs it does not have (by run id) are appended, through the
same `Journal` writer the window uses, so a live session keeps working.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from engine.display.units import binary_size
from engine.errors import SettingsError
from engine.sessions.journal import (
    Journal,
    JournalError,
    SessionLog,
    new_session_id,
    read_session,
    sessions_dir,
)
from engine.sessions.run_fields import clean_branch, clean_comparison, clean_conversation
from engine.sessions.session_schema import (
    MAX_TEXT,
    SCHEMA,
    SCHEMA_VERSION,
    SchemaError,
    _num,
    clean_record,
    clean_settings,
    is_session_id,
    run_number,
)
from engine.store.atomic import describe_os_error, move_no_replace

# The largest export `import` reads (the whole file is parsed in memory); documented
# in the README and `logitscope import --help`.
MAX_IMPORT_BYTES = 1024**3
MAX_TIME = 1e11  # seconds since 1970 (year 5138): a start time beyond is not one
MAX_NAME = 1_000  # characters of a run's name (a label, not a text)
MAX_RUN_ID = 200  # characters; a longer id from elsewhere is replaced, never kept
SHOWN = 200  # characters of the file's own content an error message may quote


class SessionImportError(SettingsError, ValueError):
    """The file is not an importable session export; the message says why.

    A SettingsError (bad input: the command line exits with 2) and a ValueError.
    """


@dataclass
class ImportResult:
    """What an import did.

    Attributes:
        session: the session as it now stands in the history.
        added: runs appended.
        already_there: runs skipped because their id was already in the session.
        dropped: what did not fit the schema (runs and records left out), one line each.
        new_id: the export's session id was unusable, so a new one was given.
    """

    session: SessionLog
    added: int = 0
    already_there: int = 0
    dropped: list[str] = field(default_factory=list)  # what did not fit the schema
    new_id: bool = False  # the export's session id was unusable: a new one was given

    def summary(self) -> str:
        """The import in one line for people.

        Returns:
            e.g. "imported 3 run(s) into session …, 1 already in the history".
        """
        parts = [f"imported {self.added} run(s) into session {self.session.session_id}"]
        if self.already_there:
            parts.append(f"{self.already_there} already in the history")
        if self.new_id:
            parts.append("the file's session id was not usable, so it got a new one")
        if self.dropped:
            parts.append(
                f"left out {len(self.dropped)} item(s) that did not fit: "
                + "; ".join(d[:SHOWN] for d in self.dropped[:3])
            )
        return ", ".join(parts)


def read_export(path: Path) -> dict:
    """Parse and check the outer shape of an export file.

    Args:
        path: the export (at most MAX_IMPORT_BYTES).

    Returns:
        The parsed document, its schema, version, session and runs checked.

    Raises:
        SessionImportError: unreadable, not JSON, not an export, or a newer schema.
    """
    path = Path(path)
    raw = _read_capped(path)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SessionImportError(f"cannot read {path}: not UTF-8 text") from e
    except json.JSONDecodeError as e:
        raise SessionImportError(f"{path} is not valid JSON ({e.msg} at line {e.lineno})") from e
    except RecursionError as e:
        raise SessionImportError(f"{path} is nested too deeply to be a session export") from e
    except ValueError as e:  # a whole number of thousands of digits
        raise SessionImportError(f"{path} holds a number too long to read") from e
    except MemoryError as e:
        raise SessionImportError(f"{path} is too large to read in this computer's memory") from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise SessionImportError(f"{path} is not a Logitscope session export")
    version = doc.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SessionImportError(f"{path} has no valid schema_version (a whole number)")
    if version > SCHEMA_VERSION:
        raise SessionImportError(f"{path} was written by a newer Logitscope; update to open it")
    if not isinstance(doc.get("session"), dict):
        raise SessionImportError(f"{path} has no 'session' object: not a complete export")
    if not isinstance(doc.get("runs"), list):
        raise SessionImportError(f"{path} has no 'runs' list: not a complete export")
    return doc


def _read_capped(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_IMPORT_BYTES, never blocking.

    Opened without waiting (a FIFO would wait for a writer forever) and checked on
    the open descriptor, so a device, FIFO, socket or folder is refused at once.

    Raises:
        SessionImportError: not a regular file, too large, or unreadable.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise SessionImportError(f"cannot read {path}: {e.strerror or 'unreadable'}") from e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SessionImportError(f"{path} is not a regular file: not a session export")
        if info.st_size > MAX_IMPORT_BYTES:
            raise SessionImportError(
                f"{path} is larger than {binary_size(MAX_IMPORT_BYTES)}, the most "
                "`import` reads: not a session export"
            )
        chunks, left = [], MAX_IMPORT_BYTES + 1  # a file growing while read stops here too
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise SessionImportError(f"{path} grew past {binary_size(MAX_IMPORT_BYTES)}")
        return b"".join(chunks)
    except OSError as e:
        raise SessionImportError(f"cannot read {path}: {e.strerror or 'unreadable'}") from e
    finally:
        os.close(fd)


def clean_run(run, index: int) -> tuple[dict, list[dict], list[str]]:
    """One exported run, every field checked.

    Args:
        run: the run's object from the export.
        index: its 0-based place in the file (messages count from 1).

    Returns:
        (header, records, problems): the run entry's fields plus name and starred,
        its valid record dicts, and one line per record left out.

    Raises:
        SchemaError: the run's own fields are unusable (the run is left out).
    """
    if not isinstance(run, dict):
        raise SchemaError(f"run {index + 1} is not an object")
    prompt, started = run.get("prompt"), run.get("started", 0.0)
    if not isinstance(prompt, str) or len(prompt) > MAX_TEXT:
        raise SchemaError(f"run {index + 1} has no prompt text")
    try:
        started = _num(started, 0.0, MAX_TIME)
    except SchemaError:
        raise SchemaError(f"run {index + 1} has no valid start time") from None
    run_id = run.get("run_id")
    model = run.get("model")
    try:
        head = {
            # Any other id (a list, a number, a long text) is replaced by a new one.
            "run_id": run_id if isinstance(run_id, str) and len(run_id) <= MAX_RUN_ID else None,
            "started": started,
            "prompt": prompt,
            "settings": clean_settings(run.get("settings", {})),
            "model": clean_record(model) if model is not None else None,
        }
    except SchemaError as e:
        raise SchemaError(f"run {index + 1}: {e}") from None
    if head["model"] is not None and head["model"]["type"] != "model":
        raise SchemaError(f"run {index + 1}: 'model' is not a model record")
    comparison = clean_comparison(run.get("comparison"))
    if comparison:
        head["comparison"] = comparison
    conversation = clean_conversation(run.get("conversation"))
    if conversation:
        head["conversation"] = conversation
    try:
        branch = clean_branch(run.get("branch"))
    except SchemaError:
        branch = None  # the run still imports, without its parent
    if branch:
        head["branch"] = branch
    name = run.get("name", "")
    meta = {
        "name": name[:MAX_NAME] if isinstance(name, str) else "",
        "starred": run.get("starred") is True,
    }
    records, problems = [], []
    raw = run.get("records", [])
    if not isinstance(raw, list):
        raise SchemaError(f"run {index + 1}: 'records' is not a list")
    for r in raw:
        try:
            records.append(clean_record(r))
        except SchemaError as e:
            problems.append(f"run {index + 1}: {e}")
    return {**head, **meta}, records, problems


def import_json(path: Path, folder: Path | None = None) -> ImportResult:
    """Add an exported session to the history (see the module docstring).

    A session new to the history is written whole to a temporary file beside its
    final name and linked into place only when complete, so a failed import (a
    full disk) leaves nothing behind.

    Args:
        path: the export file.
        folder: the sessions folder; None: `sessions_dir()`.

    Returns:
        What was added, skipped and left out.

    Raises:
        SessionImportError: the file is not an importable export (a ValueError).
        JournalError: the history folder cannot be written.
    """
    doc = read_export(path)
    folder = Path(folder) if folder is not None else sessions_dir()
    sid = doc["session"].get("session_id")
    new_id = not is_session_id(sid)
    if new_id:
        sid = new_session_id()
    dropped: list[str] = []
    runs = []
    for i, run in enumerate(doc["runs"]):
        try:
            runs.append(clean_run(run, i))
        except SchemaError as e:
            dropped.append(str(e))
    target = folder / f"{sid}.jsonl"
    if target.is_file():
        return _add_to(target, sid, runs, dropped, new_id)
    try:
        return _create(target, sid, doc["session"], runs, dropped, new_id)
    except FileExistsError:  # written meanwhile by another import: add to it instead
        return _add_to(target, sid, runs, dropped, new_id)


def _plan(runs: list, have: set, sid: str) -> tuple[list[list[dict]], int, list[str]]:
    """The journal entries of each run to add, with ids that fit the session.

    Args:
        runs: (header, records, problems) per run, from `clean_run`.
        have: the run ids already in the session.
        sid: the session id.

    Returns:
        (entries per added run, runs already there, problems of the added runs).
    """
    taken = have | {h["run_id"] for h, _r, _p in runs if run_number(h["run_id"], sid)}
    next_n = max([run_number(r, sid) or 0 for r in taken] + [0]) + 1
    ids, renamed = [], {}  # renamed: ids from elsewhere -> ids here (branches follow)
    for head, _records, _problems in runs:
        rid = head["run_id"]
        if rid in have or run_number(rid, sid) is not None:
            ids.append(rid)
            continue
        ids.append(f"{sid}/{next_n}")
        if rid is not None:
            renamed.setdefault(rid, ids[-1])  # a repeated id: branches follow the first
        next_n += 1
    planned, already, problems_out = [], 0, []
    for (head, records, problems), rid in zip(runs, ids, strict=True):
        if rid in have:
            already += 1
            continue
        head = {**head, "run_id": rid}
        if head.get("branch"):
            parent = head["branch"]["parent"]
            head["branch"] = {**head["branch"], "parent": renamed.get(parent, parent)}
        problems_out += problems
        meta = {"kind": "meta", "run_id": rid, "name": head.pop("name")}
        meta["starred"] = head.pop("starred")
        entries = [{"kind": "run", **head}, meta]
        entries += [{"kind": "record", "run_id": rid, "record": r} for r in records]
        planned.append(entries)
        have.add(rid)
    return planned, already, problems_out


def _add_to(target: Path, sid: str, runs: list, dropped: list, new_id: bool) -> ImportResult:
    """Append the runs the session lacks to its journal, each run as one write."""
    existing = read_session(target)
    planned, already, problems = _plan(runs, {r.run_id for r in existing.runs}, sid)
    journal = Journal.open(target)
    try:
        for entries in planned:
            journal.append_entries(entries)
    finally:
        journal.close()
    return ImportResult(read_session(target), len(planned), already, dropped + problems, new_id)


def _create(
    target: Path, sid: str, session: dict, runs: list, dropped: list, new_id: bool
) -> ImportResult:
    """Write a new session file whole under a temporary name, then link it into place.

    Raises:
        FileExistsError: `target` appeared meanwhile (nothing was written to it).
        JournalError: the folder cannot be written (the temporary file is removed).
    """
    planned, already, problems = _plan(runs, set(), sid)
    head = {
        "kind": "session",
        "session_id": sid,
        "started": _time(session.get("started")),
        "app_version": _short(session.get("app_version")),
    }
    if session.get("title"):
        head["title"] = _short(session.get("title"))
    # Not *.jsonl: the history never lists a half-written import.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.importing")
    journal = Journal(tmp, sid)
    try:
        journal.append_entries([head] + [e for entries in planned for e in entries])
        journal.close()
        try:
            move_no_replace(tmp, target)
        except OSError as e:
            if isinstance(e, FileExistsError):
                raise
            raise JournalError(describe_os_error(e, target)) from e
    finally:
        journal.close()
        with contextlib.suppress(OSError):
            tmp.unlink()
    return ImportResult(read_session(target), len(planned), already, dropped + problems, new_id)


def _time(v) -> float:
    """A start time from the file: a finite number of seconds, else 0 (unknown)."""
    try:
        return _num(v, 0.0, MAX_TIME)
    except SchemaError:
        return 0.0


def _short(v) -> str:
    """A short text field (the app version): text cut at 40 characters, else empty."""
    return v[:40] if isinstance(v, str) else ""
