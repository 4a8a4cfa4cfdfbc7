"""A FIFO, a device or a link to one, given where a file is expected, is named for what
it is (never "not found"), never waited on and never read without end: `read`,
`lab distill --text`, `lab calibrate --questions`, and session files in the sessions
folder (skipped and named once, the other sessions listed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from engine.errors import SettingsError
from engine.lab.questions import load_questions
from engine.reading.text_file import read_text_file
from engine.sessions.session_log import list_sessions
from tests.child_memory import ROOT, run_measured

CEILING = 3  # peak RSS with a link to /dev/zero in the folder, against without


def _no_hang(fn, *args):
    """fn(*args) in a thread: its result or exception, failing if it blocks."""
    out = {}

    def call():
        try:
            out["value"] = fn(*args)
        except Exception as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), f"{fn.__name__} blocked"
    return out


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "text.txt"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev zero", "link to dev zero"])
def test_a_text_file_that_is_not_one_is_named(tmp_path, fifo, kind):
    path = {"fifo": fifo, "dev zero": "/dev/zero", "link to dev zero": tmp_path / "z.txt"}[kind]
    if kind == "link to dev zero":
        path.symlink_to("/dev/zero")
    what = "a FIFO" if kind == "fifo" else "a character device"
    out = _no_hang(read_text_file, type(tmp_path)(path))
    assert isinstance(out.get("error"), SettingsError)
    assert str(out["error"]) == f"{path} is not a regular file ({what}): give a text file"
    out = _no_hang(load_questions, path)
    assert isinstance(out.get("error"), SettingsError)
    assert str(out["error"]) == f"{path} is not a regular file ({what}): give a .jsonl or .csv file"


def test_missing_and_folder_keep_their_words(tmp_path):
    with pytest.raises(SettingsError) as e:
        read_text_file(tmp_path / "nope.txt")
    assert str(e.value) == f"{tmp_path / 'nope.txt'}: not found; give a text file"
    with pytest.raises(SettingsError) as e:
        read_text_file(tmp_path)
    assert str(e.value) == f"{tmp_path}: a folder; give a text file"
    with pytest.raises(SettingsError) as e:
        load_questions(tmp_path / "nope.jsonl")
    assert str(e.value) == (
        f"{tmp_path / 'nope.jsonl'}: no such question file (give a .jsonl or .csv file)"
    )


def _cli(args, tmp_path):
    env = {**os.environ, "LOGITSCOPE_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    "args, todo",
    [
        (["read"], "give a text file"),
        (["lab", "distill", "--student", "nowhere", "--text"], "give a text file"),
        (["lab", "calibrate", "--questions"], "give a .jsonl or .csv file"),
    ],
    ids=["read", "distill", "calibrate"],
)
def test_the_commands_name_a_fifo_and_dev_zero(tmp_path, fifo, args, todo):
    for path, what in ((fifo, "a FIFO"), ("/dev/zero", "a character device")):
        p = _cli([*args, str(path)], tmp_path)  # the old reader said "not found"
        assert (p.returncode, p.stdout) == (2, "")
        assert p.stderr == f"logitscope: error: {path} is not a regular file ({what}): {todo}\n"


GOOD_ID = "20260101-000000-aaaa"


def _sessions(tmp_path):
    folder = tmp_path / "data" / "sessions"
    folder.mkdir(parents=True)
    lines = [
        {"kind": "session", "session_id": GOOD_ID, "started": 1.0},
        {"kind": "run", "run_id": f"{GOOD_ID}/1", "prompt": "hi", "settings": {}},
    ]
    (folder / f"{GOOD_ID}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


def test_special_session_files_are_skipped_and_named(tmp_path):
    folder = _sessions(tmp_path)
    os.mkfifo(folder / "20260102-000000-bbbb.jsonl")
    (folder / "20260103-000000-cccc.jsonl").symlink_to("/dev/zero")
    out = _no_hang(list_sessions, folder)
    sessions, problems = out["value"]
    assert [s.session_id for s in sessions] == [GOOD_ID]
    assert problems == [
        "20260103-000000-cccc.jsonl: not a regular file (a character device): skipped",
        "20260102-000000-bbbb.jsonl: not a regular file (a FIFO): skipped",
    ]


def test_a_session_file_over_the_limit_is_skipped_unread(tmp_path, monkeypatch):
    from engine.sessions import session_log

    folder = _sessions(tmp_path)
    monkeypatch.setattr(session_log, "MAX_SESSION_BYTES", 100)
    sessions, problems = list_sessions(folder)
    assert sessions == [] and problems == [f"{GOOD_ID}.jsonl: over 100 bytes: skipped"]


def test_sessions_json_does_not_hang_or_grow(tmp_path):
    folder = _sessions(tmp_path)
    env = {"LOGITSCOPE_DATA_DIR": str(tmp_path / "data")}
    base = run_measured(["sessions", "--json"], env=env)
    assert base.returncode == 0 and base.stderr == ""
    listed = json.loads(base.stdout)
    os.mkfifo(folder / "20260102-000000-bbbb.jsonl")  # the old reader waited for a writer
    (folder / "20260103-000000-cccc.jsonl").symlink_to("/dev/zero")  # ... or read forever
    m = run_measured(["sessions", "--json"], env=env, timeout=60)
    assert m.returncode == 0 and json.loads(m.stdout) == listed
    assert m.stderr == (
        "logitscope: warning: unreadable session file 20260103-000000-cccc.jsonl: not a "
        "regular file (a character device): skipped\n"
        "logitscope: warning: unreadable session file 20260102-000000-bbbb.jsonl: not a "
        "regular file (a FIFO): skipped\n"
    )
    assert m.peak_rss_kb < CEILING * base.peak_rss_kb, (m.peak_rss_kb, base.peak_rss_kb)
    assert sorted(os.listdir(folder)) == [
        f"{GOOD_ID}.jsonl", "20260102-000000-bbbb.jsonl", "20260103-000000-cccc.jsonl"
    ]  # fmt: skip


def test_settings_and_model_prefs_never_wait_on_a_fifo_swapped_in_after_the_stat(tmp_path):
    from engine.models import model_prefs
    from engine.store import settings_files

    regular = tmp_path / "regular.json"
    regular.write_text("{}")
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)

    class Racy(type(tmp_path)):  # stat() sees the regular file, the open finds a FIFO
        def stat(self, **kwargs):
            return os.stat(regular)

    out = _no_hang(settings_files.read_text, Racy(fifo))
    assert isinstance(out.get("error"), settings_files.DamagedFile)
    assert str(out["error"]) == "it is not a regular file"
    assert _no_hang(model_prefs._load_raw, Racy(fifo))["value"] == (
        None,
        "it is not a regular file",
    )


def test_a_journal_opened_on_a_special_file_neither_hangs_nor_reads_without_end(tmp_path):
    """Journal.open (History's rename, star, delete) on a FIFO or a link to /dev/zero
    named like a session: the name is its id, nothing is read."""
    import threading

    from engine.sessions.journal import Journal, _max_run_number

    fifo = tmp_path / "20261207-000000-abcd.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "20261207-000001-abcd.jsonl"
    zero.symlink_to("/dev/zero")
    got = {}

    def open_both():
        got["ids"] = [Journal.open(fifo).session_id, Journal.open(zero).session_id]
        got["runs"] = [_max_run_number(fifo, "x"), _max_run_number(zero, "x")]

    t = threading.Thread(target=open_both, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive()
    assert got == {"ids": [fifo.stem, zero.stem], "runs": [0, 0]}
