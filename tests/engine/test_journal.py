"""The session journal: crash safety, history, exports and import."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import random
import re
import signal
import time
from html.parser import HTMLParser

import pytest

from engine.backends.mlx.generate import generate_records
from engine.run.records import TokenRecord, to_dict
from engine.run.settings import SamplingSettings
from engine.sessions.export import csv_cell, render, to_json
from engine.sessions.journal import Journal, find, list_sessions, read_session
from engine.sessions.session_import import import_json
from tests.journal_child import append_forever

EVIL = "<script>alert('x')</script></textarea><img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def real_records(tiny_lm):
    settings = SamplingSettings(temperature=0.8, max_tokens=8, seed=3)
    return list(generate_records(tiny_lm, "hello", settings))


@pytest.fixture
def session_file(tmp_path, real_records):
    journal = Journal.create(tmp_path)
    settings = SamplingSettings(temperature=0.8, max_tokens=8, seed=3)
    for prompt in ("first prompt", "second prompt"):
        run_id = journal.start_run(prompt, settings.to_dict(), None)
        for rec in real_records:
            journal.record(run_id, rec)
    journal.close()
    return journal.path


def test_journal_reads_back_every_record(session_file, real_records):
    session = read_session(session_file)
    assert session.bad_lines == 0
    assert [r.prompt for r in session.runs] == ["first prompt", "second prompt"]
    run = session.runs[0]
    assert run.tokens == [r for r in real_records if isinstance(r, TokenRecord)]
    assert run.done == real_records[-1]
    assert run.run_id == f"{session.session_id}/1"


def test_torn_last_line_is_skipped_and_the_next_writer_starts_clean(session_file):
    with open(session_file, "a") as f:
        f.write('{"kind": "record", "run_id": "x", "rec')  # killed mid-write
    session = read_session(session_file)
    assert session.bad_lines == 1 and len(session.runs) == 2
    journal = Journal(session_file, session.session_id)
    journal.meta(session.runs[0].run_id, name="after the crash")
    journal.close()
    again = read_session(session_file)
    assert again.bad_lines == 1  # the torn fragment only; the new line is intact
    assert again.runs[0].name == "after the crash"


def test_a_corrupt_session_file_does_not_hide_the_others(tmp_path, session_file):
    (session_file.parent / "garbage.jsonl").write_bytes(os.urandom(2000))
    (session_file.parent / "folder.jsonl").mkdir()
    sessions, problems = list_sessions(session_file.parent)
    good = [s for s in sessions if s.path == session_file]
    assert len(good) == 1 and len(good[0].runs) == 2
    assert any("folder.jsonl" in p for p in problems)


@pytest.mark.slow
def test_sigkill_200_times_loses_no_acknowledged_record(tmp_path, real_records):
    """Each child is killed at a random moment; every append that returned is readable
    afterwards, and the history lists every session (only a torn last line skipped)."""
    import multiprocessing as mp

    # Children fork from a lean server that has only the journal loaded: forking this
    # process (MLX, a model) cost ~0.3 s a kill.
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.journal_child"])
    records = [to_dict(r) for r in real_records if r.type == "token"]
    rng = random.Random(0)
    acked: dict = {}
    for k in range(200):
        path = tmp_path / f"s{k:03}.jsonl"
        Journal(path, path.stem)._write(
            {"kind": "session", "session_id": path.stem, "started": float(k)}
        )
        recv, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=append_forever, args=(path, records, send))
        child.start()
        send.close()
        assert recv.poll(10) and recv.recv() == "ready"  # forking a big test process is slow
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        last = None
        while recv.poll():
            try:
                last = recv.recv()
            except (EOFError, OSError):
                break
        recv.close()
        acked[path] = last
    sessions, problems = list_sessions(tmp_path)
    assert not problems and len(sessions) == 200
    total = 0
    for session in sessions:
        assert session.bad_lines <= 1  # at most the line being written when killed
        last = acked[session.path]
        if last is None:
            continue
        run = session.run(last[0])
        assert run is not None and [t.step for t in run.tokens][: last[1] + 1] == list(
            range(last[1] + 1)
        )
        total += 1
    assert total > 100  # most children were killed mid-stream, after some appends


def test_json_export_import_export_round_trip(tmp_path, session_file):
    session = read_session(session_file)
    first = to_json(session)
    path = tmp_path / "export.json"
    path.write_text(first)
    other = tmp_path / "elsewhere"
    other.mkdir()
    imported = import_json(path, other).session
    assert to_json(imported) == first
    doc = json.loads(first)
    assert doc["schema_version"] == 1 and len(doc["runs"]) == 2


def test_import_refuses_what_is_not_an_export(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        import_json(bad, tmp_path)
    bad.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a Logitscope session export"):
        import_json(bad, tmp_path)


def test_jsonl_and_csv_exports(session_file):
    session = read_session(session_file)
    lines = [json.loads(x) for x in render("jsonl", session).splitlines()]
    assert lines[0]["kind"] == "session"
    assert [x["kind"] for x in lines].count("run") == 2
    rows = list(csv.DictReader(io.StringIO(render("csv", session))))
    tokens = session.runs[0].tokens + session.runs[1].tokens
    assert len(rows) == len(tokens)
    for row, t in zip(rows, tokens, strict=True):
        assert int(row["step"]) == t.step and row["token"] == csv_cell(t.label)
        assert row["token"] != "" and bytes.fromhex(row["bytes"]) == bytes(t.bytes)
        assert float(row["probability"]) == pytest.approx(t.prob, rel=1e-5)
        assert float(row["entropy"]) == pytest.approx(t.entropy, rel=1e-5)
        assert [c["token_id"] for c in json.loads(row["top"])] == [c.token_id for c in t.top]
        # One naming: the CSV's candidates are the JSON record's `top`, key for key.
        from engine.run.records import to_dict

        assert json.loads(row["top"]) == json.loads(json.dumps(to_dict(t)["top"]))


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _v in attrs]

    def handle_data(self, data):
        self.text.append(data)


def _evil_session(tmp_path, real_records):
    journal = Journal.create(tmp_path)
    settings = SamplingSettings(system_prompt=EVIL).to_dict()
    run_id = journal.start_run(EVIL, settings, None)
    for rec in real_records:
        if isinstance(rec, TokenRecord):
            rec = dataclasses.replace(rec, text=EVIL if rec.step == 1 else rec.text)
        journal.record(run_id, rec)
    journal.meta(run_id, name=EVIL)
    journal.close()
    return read_session(journal.path)


def test_html_report_shows_model_markup_as_text(tmp_path, real_records):
    session = _evil_session(tmp_path, real_records)
    page = render("html", session)
    parser = _Collector()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert "textarea" not in parser.tags
    assert not [a for a in parser.attrs if a.startswith("on")]
    assert sum(EVIL in t for t in parser.text) >= 3  # prompt, system prompt, token, name
    assert "<svg" in page and "polyline" in page  # the charts are drawn
    assert not re.search(r"[=' ,>]nan[,' <]", page)  # no undefined point drawn or labelled
    assert page.count("class='tok'") == len(session.runs[0].tokens)


def test_markdown_transcript(tmp_path, real_records):
    session = _evil_session(tmp_path, real_records)
    md = render("md", session)
    assert "decode" in md and "prompt tokens" in md
    assert "<script>" in md.split("**Prompt**")[1]  # inside a code fence, as text
    assert "\\<script\\>" in md.splitlines()[2]  # the heading is escaped


READ_TEXT = "The capital of Australia is Sydney."


@pytest.fixture(scope="module")
def read_session_file(tmp_path_factory, tiny_lm):
    """A read of READ_TEXT through the tiny model, journaled as the app journals one
    (the text as the prompt, the sampling settings the window had at the time)."""
    from engine.backends.mlx.read_pass import read_records
    from engine.reading.request import ReadRequest

    journal = Journal.create(tmp_path_factory.mktemp("read"))
    settings = SamplingSettings(temperature=0.8, top_p=0.9, chat_template=False)
    run_id = journal.start_run(READ_TEXT, settings.to_dict(), None)
    for rec in read_records(tiny_lm, ReadRequest(READ_TEXT)):
        journal.record(run_id, rec)
    journal.close()
    return journal.path


def test_a_reads_reports_speak_of_the_text_read(read_session_file):
    session = read_session(read_session_file)
    (run,) = session.runs
    tokens = run.tokens
    assert tokens and all(t.read for t in tokens) and run.done.reading is not None
    # The figures, from the token records in NumPy float64 (not the engine's tally).
    import numpy as np

    lps = np.array([t.logprob for t in tokens], dtype=np.float64)
    ppl = float(np.exp(-lps.mean()))
    bpb = float(-lps.sum() / np.log(2) / len(READ_TEXT.encode()))
    assert 1 < ppl < float("inf")  # a random-weight model: very surprised, but a number
    for page in (render("html", session), render("md", session)):
        assert f"{ppl:,.2f}" in page  # the perplexity as the status line writes it
        assert f"{bpb:.3f}" in page
        assert "tokens read" in page and "a text read through the model" in page
        for word in ("temperature", "top_p", "generated tokens", "Answer", "decode"):
            assert word not in page  # the sampling settings did not apply; nothing decoded
    html_page = render("html", session)
    assert html_page.count("class='tok'") == len(tokens)
    assert "Text read" in html_page and not re.search(r"\bchose\b", html_page)
    assert all(t.rank is not None for t in tokens)  # the hover gives each token's rank
    assert all(f"step {t.step} · " in html_page for t in tokens)
    assert html_page.count(" · read · rank ") == len(tokens)
    assert f" · read · rank {tokens[-1].rank:,}<table>" in html_page  # the last one's own
    assert "sampled from" not in html_page  # the distribution is the model's one


def test_find_by_session_or_run(session_file):
    sid = session_file.stem
    session, run = find(sid, session_file.parent)
    assert run is None and len(session.runs) == 2
    _s, run = find(f"{sid}/2", session_file.parent)
    assert run.prompt == "second prompt"
    with pytest.raises(LookupError, match="no session"):
        find("nope", session_file.parent)


def test_listeners_hear_each_listed_change_on_the_writing_thread(tmp_path, real_records):
    import threading

    from engine.sessions import journal as journal_module

    heard = []

    def listener(event):
        heard.append((event.what, event.run_ids, threading.current_thread().name))

    def broken(_event):
        raise RuntimeError("a view that fails must not stop the writer")

    journal_module.add_listener(broken)
    journal_module.add_listener(listener)
    try:
        journal = Journal.create(tmp_path)

        def write():
            run_id = journal.start_run("p", SamplingSettings().to_dict(), None)
            for rec in real_records:  # tokens notify nobody; the done record ends the run
                journal.record(run_id, rec)
            journal.meta(run_id, starred=True)

        writer = threading.Thread(target=write, name="writer")
        writer.start()
        writer.join()
        journal.rewrite(lambda e: True)
        journal.close()
    finally:
        journal_module.remove_listener(listener)
        journal_module.remove_listener(broken)
    sid = journal.session_id
    assert [h[:2] for h in heard] == [
        ("session", ()),
        ("run", (f"{sid}/1",)),
        ("ended", (f"{sid}/1",)),
        ("meta", (f"{sid}/1",)),
        ("rewrite", ()),
    ]
    assert [h[2] for h in heard[1:4]] == ["writer"] * 3
    assert read_session(journal.path).run(f"{sid}/1").done is not None
