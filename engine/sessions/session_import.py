"""Importing an exported session JSON into the history, adding and never replacing.

The file is checked field by field against the session schema before anything
is written. The session's journal file name comes from a strictly validated id
(or a new one), never from a path in the data. If the session is already in the
history, only the runs it does not have (by run id) are appended, through the
same `Journal` writer the window uses, so a live session keeps working.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from engine.sessions.journal import Journal, SessionLog, new_session_id, read_session, sessions_dir
from engine.sessions.run_fields import clean_branch, clean_comparison, clean_conversation
from engine.sessions.session_schema import (
    SCHEMA,
    SCHEMA_VERSION,
    SchemaError,
    clean_record,
    clean_settings,
    is_session_id,
    run_number,
)

MAX_IMPORT_BYTES = 2 * 1024**3


class SessionImportError(ValueError):
    """The file is not an importable session export; the message says why."""


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
                + "; ".join(self.dropped[:3])
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
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise SessionImportError(f"{path} is larger than 2 GB: not a session export")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not UTF-8 text"
        raise SessionImportError(f"cannot read {path}: {why}") from e
    except json.JSONDecodeError as e:
        raise SessionImportError(f"{path} is not valid JSON ({e.msg} at line {e.lineno})") from e
    except RecursionError as e:
        raise SessionImportError(f"{path} is nested too deeply to be a session export") from e
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
    if not isinstance(prompt, str):
        raise SchemaError(f"run {index + 1} has no prompt text")
    if isinstance(started, bool) or not isinstance(started, int | float) or started != started:
        raise SchemaError(f"run {index + 1} has no valid start time")
    model = run.get("model")
    head = {
        "run_id": run.get("run_id"),
        "started": float(started),
        "prompt": prompt,
        "settings": clean_settings(run.get("settings", {})),
        "model": clean_record(model) if model is not None else None,
    }
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
    meta = {"name": name if isinstance(name, str) else "", "starred": run.get("starred") is True}
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
    result_new_id = not is_session_id(sid)
    if result_new_id:
        sid = new_session_id()
    target = folder / f"{sid}.jsonl"
    existing = read_session(target) if target.is_file() else None
    have = {r.run_id for r in existing.runs} if existing else set()
    journal = Journal.open(target) if existing else Journal(target, sid)
    if existing is None:
        s = doc["session"]
        started = s.get("started")
        journal.append_entries(
            [
                {
                    "kind": "session",
                    "session_id": sid,
                    "started": float(started) if isinstance(started, int | float) else 0.0,
                    "app_version": str(s.get("app_version", ""))[:40],
                }
            ]
        )
    dropped: list[str] = []
    runs = []
    for i, run in enumerate(doc["runs"]):
        try:
            runs.append(clean_run(run, i))
        except SchemaError as e:
            dropped.append(str(e))
    taken = have | {h["run_id"] for h, _r, _p in runs if run_number(h["run_id"], sid)}
    next_n = max([run_number(r, sid) or 0 for r in taken] + [0]) + 1
    added = already = 0
    renamed: dict = {}  # ids from elsewhere -> their ids here (branches follow their parents)
    for head, _records, _problems in runs:
        if head["run_id"] not in have and run_number(head["run_id"], sid) is None:
            renamed[head["run_id"]], next_n = f"{sid}/{next_n}", next_n + 1
    for head, records, problems in runs:
        if head["run_id"] in have:
            already += 1
            continue
        head["run_id"] = renamed.get(head["run_id"], head["run_id"])
        if head.get("branch"):
            parent = head["branch"]["parent"]
            head["branch"] = {**head["branch"], "parent": renamed.get(parent, parent)}
        dropped += problems
        rid = head["run_id"]
        meta = {
            "kind": "meta",
            "run_id": rid,
            "name": head.pop("name"),
            "starred": head.pop("starred"),
        }
        entries = [{"kind": "run", **head}, meta]
        entries += [{"kind": "record", "run_id": rid, "record": r} for r in records]
        journal.append_entries(entries)
        have.add(rid)
        added += 1
    journal.close()
    return ImportResult(read_session(target), added, already, dropped, result_new_id)
