"""`logitscope import` on hostile input: devices, FIFOs, huge files, wrong field types,
numbers too large for a float, and a disk that fills up mid-import.

Each case ends with one line and the right exit status (2 for a file that is not an
importable export, 1 for a history that cannot be written), never an internal error,
a hang or a half-written session file.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import pytest

from engine.cli import main
from engine.sessions.journal import JournalError, read_session
from engine.sessions.session_import import MAX_IMPORT_BYTES, import_json


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    """The history folder `logitscope import` writes to (a fresh data folder)."""
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data" / "sessions"


def _run(run_id="s1/1", started=1.0, **extra) -> dict:
    return {"run_id": run_id, "started": started, "prompt": "p", "settings": {}} | extra


def _export(tmp_path, runs, session=None) -> Path:
    doc = {
        "schema": "logitscope.session",
        "schema_version": 1,
        "session": session or {"session_id": "s1", "started": 1.0},
        "runs": runs,
    }
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    return path


def _folder(tmp_path) -> Path:
    """An empty history folder to import into."""
    (tmp_path / "h").mkdir(exist_ok=True)
    return tmp_path / "h"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("logitscope: error: "), err
    assert "internal error" not in err and "Traceback" not in err
    return err


def _import_in_thread(argv) -> list:
    """main(argv) on a thread, so a hang fails the test instead of stopping it."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(main(argv)), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "import still waiting after 20 s"
    return out


# -- what is not a regular file, or too large, is refused at once -------------------------
def test_dev_zero_is_refused_not_read(data, capsys):
    assert main(["import", "/dev/zero"]) == 2  # was an internal MemoryError
    assert "not a regular file" in _one_line(capsys)


def test_a_fifo_is_refused_without_waiting_for_a_writer(data, tmp_path, capsys):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert _import_in_thread(["import", str(fifo)]) == [2]  # was a hang
    assert "not a regular file" in _one_line(capsys)


def test_a_folder_is_refused(data, tmp_path, capsys):
    assert main(["import", str(tmp_path)]) == 2
    assert "not a regular file" in _one_line(capsys)


def test_a_file_over_the_cap_is_refused_before_reading(data, tmp_path, capsys):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: nothing is really written
        f.truncate(MAX_IMPORT_BYTES + 1)
    assert main(["import", str(big)]) == 2
    assert "larger than 1 GiB" in _one_line(capsys)
    assert not data.exists() or not list(data.iterdir())


def test_a_number_of_thousands_of_digits(data, tmp_path, capsys):
    (tmp_path / "n.json").write_text("1" * 5000)
    assert main(["import", str(tmp_path / "n.json")]) == 2  # was exit 1 with Python's words
    assert "number too long" in _one_line(capsys)


# -- every field checked for type and range -------------------------------------------------
def test_run_ids_of_any_type_get_fresh_ids(data, tmp_path, capsys):
    runs = [_run(["a"]), _run({"x": 1}), _run(7), _run("x" * 500), _run(None)]
    path = _export(tmp_path, runs, {"session_id": "s1", "started": 1.0})
    assert main(["import", str(path)]) == 0  # lists and objects: internal TypeError before
    assert "imported 5 run(s) into session s1" in capsys.readouterr().out
    session = read_session(data / "s1.jsonl")
    assert [r.run_id for r in session.runs] == [f"s1/{n}" for n in range(1, 6)]


def test_a_repeated_foreign_id_gives_two_runs_and_the_branch_follows_the_first(tmp_path):
    branch = {"parent": "other/1", "step": 0, "kind": "sample"}
    runs = [_run("other/1"), _run("other/1"), _run("other/2", branch=branch)]
    result = import_json(_export(tmp_path, runs), _folder(tmp_path))
    assert result.added == 3
    ids = [r.run_id for r in result.session.runs]
    assert ids == ["s1/1", "s1/2", "s1/3"]
    assert result.session.runs[2].branch["parent"] == "s1/1"


@pytest.mark.parametrize(
    "started",
    [10**400, -(10**400), -1.0, 1e300, "1", [1], True],
    ids=["400 digits", "-400 digits", "negative", "1e300", "text", "list", "bool"],
)
def test_a_run_start_time_out_of_range_leaves_that_run_out(tmp_path, started):
    text = json.dumps(_run("s1/2")).replace('"started": 1.0', f'"started": {json.dumps(started)}')
    if isinstance(started, int) and not isinstance(started, bool):
        text = text.replace(json.dumps(started), str(started))
    path = _export(tmp_path, [_run("s1/1"), json.loads(text)])
    result = import_json(path, _folder(tmp_path))  # 10**400: internal OverflowError before
    assert result.added == 1 and result.dropped == ["run 2 has no valid start time"]


def test_a_session_start_of_400_digits_is_unknown_not_fatal(tmp_path):
    path = _export(tmp_path, [_run()])
    path.write_text(path.read_text().replace('"started": 1.0}', f'"started": {10**400}}}', 1))
    result = import_json(path, _folder(tmp_path))  # internal OverflowError before
    assert result.added == 1 and result.session.started == 0.0


def test_records_and_settings_with_huge_or_misplaced_values_are_left_out(tmp_path):
    progress = {"type": "progress", "message": "m", "fraction": 10**400}
    error = {"type": "error", "message": "m", "kind": "error"}
    records = [progress, {"type": ["done"]}, {"type": {"a": 1}}, error]
    bad_settings = _run("s1/2", settings={"min_p": 10**400})
    path = _export(tmp_path, [_run("s1/1", records=records), bad_settings])
    result = import_json(path, _folder(tmp_path))
    assert result.added == 1
    assert len(result.session.runs[0].records) == 1  # the one record that fits
    assert len(result.dropped) == 4
    assert result.dropped[0].startswith("run 2: settings")
    assert "fraction" in result.dropped[1] and "too large" in result.dropped[1]
    assert result.dropped[2:] == ["run 1: unknown record type 'list'"] + [
        "run 1: unknown record type 'dict'"
    ]


def test_a_left_out_item_is_quoted_short(tmp_path):
    run = _run(settings={"temperature": "x" * 100_000})  # quoted whole before
    result = import_json(_export(tmp_path, [run]), _folder(tmp_path))
    assert result.dropped[0].startswith("run 1: settings: temperature must be")
    assert len(result.summary()) < 500


# -- a failed write leaves nothing behind ------------------------------------------------------
def _disk_full(monkeypatch):
    import engine.sessions.journal as journal

    def full(fd, data):
        os.write(fd, data[:10])  # part of it fits, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal, "_write_all", full)


def test_a_full_disk_leaves_no_session_file(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    path = _export(tmp_path, [_run()])
    _disk_full(monkeypatch)
    with pytest.raises(JournalError, match="the disk is full"):
        import_json(path, folder)
    assert list(folder.iterdir()) == []  # was an empty s1.jsonl, listed in the history


def test_a_full_disk_on_the_command_line_is_one_line_exit_1(data, tmp_path, monkeypatch, capsys):
    path = _export(tmp_path, [_run()])
    _disk_full(monkeypatch)
    assert main(["import", str(path)]) == 1
    assert "the disk is full" in _one_line(capsys)
    assert list(data.iterdir()) == []


def test_a_new_session_arrives_whole(tmp_path):
    folder = _folder(tmp_path)
    runs = [
        _run("s1/1"),
        _run("s1/2", records=[{"type": "error", "message": "m", "kind": "error"}]),
    ]
    result = import_json(_export(tmp_path, runs), folder)
    assert [p.name for p in folder.iterdir()] == ["s1.jsonl"]
    assert result.added == 2 and [len(r.records) for r in result.session.runs] == [0, 1]
    again = import_json(_export(tmp_path, runs), folder)  # into the existing file
    assert again.added == 0 and again.already_there == 2
