"""Nothing the user made is lost: imports, conversions, exports, the journal, bad files.

Each test is a case seen on the earlier code (see issue "Nothing the user made is
ever lost") and fails there.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from engine.backends.mlx.generate import generate_records
from engine.errors import ModelError
from engine.run.settings import SamplingSettings
from engine.sessions.export import render, to_json
from engine.sessions.journal import Journal, JournalError, read_session
from engine.sessions.session_import import import_json
from tests.gguf_fixtures import write_tiny_gguf

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def records(tiny_lm):
    settings = SamplingSettings(temperature=0.8, max_tokens=6, seed=2)
    return list(generate_records(tiny_lm, "hello", settings))


def _session(folder: Path, records, prompts=("first", "second")) -> Journal:
    journal = Journal.create(folder)
    for p in prompts:
        rid = journal.start_run(p, SamplingSettings().to_dict(), None)
        for r in records:
            journal.record(rid, r)
    return journal


# -- 1, 12: import adds, never replaces; the file name comes from the app ---------------
def test_importing_one_run_keeps_the_rest_and_the_live_writer(tmp_path, records):
    journal = _session(tmp_path, records)
    session = read_session(journal.path)
    out = tmp_path / "one.json"
    out.write_text(to_json(session, [session.runs[0]]))
    result = import_json(out, tmp_path)
    assert result.added == 0 and result.already_there == 1
    assert len(read_session(journal.path).runs) == 2
    # The live journal keeps writing to the same file, with a fresh run number.
    rid = journal.start_run("third", {}, None)
    journal.record(rid, records[-1])
    after = read_session(journal.path)
    assert [r.prompt for r in after.runs] == ["first", "second", "third"]
    assert rid == f"{session.session_id}/3"


def test_import_into_an_existing_session_adds_only_new_runs(tmp_path, records):
    (tmp_path / "a").mkdir()
    source = _session(tmp_path / "a", records, ("one", "two", "three"))
    full = read_session(source.path)
    export = tmp_path / "all.json"
    export.write_text(to_json(full))
    target = tmp_path / "b"
    target.mkdir()
    partial = tmp_path / "partial.json"
    partial.write_text(to_json(full, full.runs[:1]))
    assert import_json(partial, target).added == 1
    result = import_json(export, target)
    assert (result.added, result.already_there) == (2, 1)
    assert [r.prompt for r in result.session.runs] == ["one", "two", "three"]
    assert result.session.runs[2].tokens == full.runs[2].tokens


@pytest.mark.parametrize("sid", ["../../escape", "/etc/passwd", "a/b", "..", "", 5, None])
def test_import_never_writes_outside_the_sessions_folder(tmp_path, records, sid):
    folder = tmp_path / "sessions"
    folder.mkdir()
    doc = json.loads(to_json(read_session(_session(tmp_path, records, ("x",)).path)))
    doc["session"]["session_id"] = sid
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(doc))
    before = set(tmp_path.rglob("*"))
    result = import_json(path, folder)
    created = set(tmp_path.rglob("*")) - before
    assert created == {result.session.path} and result.session.path.parent == folder
    assert result.new_id and len(result.session.runs) == 1


# -- 11: hostile data is text in every export ---------------------------------------------
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)><svg onload=alert(3)>"


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.seen = []

    def handle_starttag(self, tag, attrs):
        self.seen.append((tag, tuple(sorted(n for n, _v in attrs))))


def _hostile_export(tmp_path, records) -> Path:
    doc = json.loads(to_json(read_session(_session(tmp_path, records, ("p",)).path)))
    run = doc["runs"][0]
    run["prompt"] = run["name"] = MARKUP
    run["settings"]["system_prompt"] = MARKUP
    run["settings"]["temperature"] = MARKUP  # a number field holding markup
    run["model"] = {
        "type": "model",
        "name": MARKUP,
        "path": MARKUP,
        "architecture": MARKUP,
        "quantization": '=HYPERLINK("http://x")',
        "size_bytes": 1,
        "context_length": 64,
        "device": "[x](javascript:alert(1))",
        "load_s": 0.1,
    }
    for rec in run["records"]:
        if rec["type"] == "token":
            rec["text"] = "=cmd|' /C calc'!A0" if rec["step"] == 0 else MARKUP
            rec["top"][0]["text"] = "+SUM(1)"
        if rec["type"] == "done":
            rec["generated_tokens"] = "<img src=x onerror=alert(4)>"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_crafted_import_exports_as_inert_text(tmp_path, records):
    folder = tmp_path / "s"
    folder.mkdir()
    result = import_json(_hostile_export(tmp_path, records), folder)
    # The run with markup in a number field is refused, and the user is told why.
    assert result.added == 0 and any("temperature" in d for d in result.dropped)


def test_hostile_strings_stay_text_in_html_markdown_and_csv(tmp_path, records):
    path = _hostile_export(tmp_path, records)
    doc = json.loads(path.read_text())
    doc["runs"][0]["settings"]["temperature"] = 0.7  # only the strings are hostile now
    for rec in doc["runs"][0]["records"]:
        if rec["type"] == "done":
            rec["generated_tokens"] = 3
    path.write_text(json.dumps(doc))
    folder = tmp_path / "s"
    folder.mkdir()
    result = import_json(path, folder)
    assert result.added == 1 and not result.dropped
    session = result.session
    page = render("html", session)
    tags = _Tags()
    tags.feed(page)
    (tmp_path / "t").mkdir()
    template = _Tags()
    template.feed(render("html", read_session(_session(tmp_path / "t", records, ("p",)).path)))
    assert set(tags.seen) <= set(template.seen)  # every tag and attribute set is the template's
    assert "script" not in {t for t, _a in tags.seen} and "img" not in {t for t, _a in tags.seen}
    # Markdown rendered by a CommonMark renderer (raw HTML allowed): no tag or link from data.
    from markdown_it import MarkdownIt

    shown = _Tags()
    shown.feed(MarkdownIt("commonmark").enable("table").render(render("md", session)))
    allowed = {
        "h1",
        "h2",
        "p",
        "code",
        "pre",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "strong",
        "em",
        "blockquote",
    }
    assert {t for t, _a in shown.seen} <= allowed, shown.seen
    rows = list(csv.reader(io.StringIO(render("csv", session))))
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell
            assert not (cell.startswith("-") and not _is_number(cell)), cell


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- 5: one writer, torn-line guard for every append ---------------------------------------
def test_history_meta_after_a_torn_line_is_not_lost(tmp_path, records):
    from app.history.panel import append_meta

    journal = _session(tmp_path, records, ("p",))
    journal.close()
    with open(journal.path, "a") as f:
        f.write('{"kind": "record", "run_id": "x", "rec')  # a crash mid-line
    session = read_session(journal.path)
    append_meta(session, session.runs[0].run_id, name="kept")
    again = read_session(journal.path)
    assert again.runs[0].name == "kept" and again.bad_lines == 1


# -- 3, 8: writes are atomic, never replace silently, and say where they failed ------------
def test_cli_export_never_overwrites_without_force(tmp_path, records):
    journal = _session(tmp_path, records, ("p",))
    env = {**os.environ, "LOGITSCOPE_DATA_DIR": str(tmp_path)}
    os.makedirs(tmp_path / "sessions", exist_ok=True)
    shutil.copy(journal.path, tmp_path / "sessions" / journal.path.name)
    out = tmp_path / "mine.json"
    out.write_text("precious")
    cmd = [
        sys.executable,
        "-m",
        "engine",
        "export",
        journal.session_id,
        "--format",
        "json",
        "-o",
        str(out),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    assert p.returncode == 1 and "already exists" in p.stderr and "Traceback" not in p.stderr
    assert out.read_text() == "precious"
    p = subprocess.run([*cmd, "--force"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert p.returncode == 0 and json.loads(out.read_text())["schema"] == "logitscope.session"
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".tmp")]


def test_a_full_disk_is_one_sentence_naming_the_folder(tmp_path, monkeypatch, records):
    import errno

    import engine.sessions.journal as jmod

    journal = _session(tmp_path, records, ("p",))

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jmod, "_write_all", full)
    with pytest.raises(JournalError) as e:
        journal.record("x/1", records[0])
    message = str(e.value)
    assert str(tmp_path) in message and "full" in message and "\n" not in message


# -- 2, 9: conversions are keyed on content, checked, and never replace another model -------
def test_two_different_files_with_one_name_get_their_own_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGITSCOPE_MODELS_DIR", str(tmp_path / "models"))
    from engine.backends.mlx.loader import resolve_model

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_tiny_gguf(tmp_path / "a" / "model.gguf", seed=1)
    second = write_tiny_gguf(tmp_path / "b" / "model.gguf", seed=2)
    out1, out2 = resolve_model(str(first)), resolve_model(str(second))
    assert out1 != out2 and out1.name.startswith("model-") and out2.name.startswith("model-")
    w1 = (out1 / "model.safetensors").read_bytes()
    stamp = (out1 / "model.safetensors").stat().st_mtime_ns
    assert resolve_model(str(first)) == out1  # reopened: reused, not converted again
    assert (out1 / "model.safetensors").stat().st_mtime_ns == stamp
    assert (out1 / "model.safetensors").read_bytes() == w1
    assert w1 != (out2 / "model.safetensors").read_bytes()


def test_a_damaged_copy_never_poisons_the_good_file(tmp_path, monkeypatch, smollm_gguf):
    """One tensor's type flipped (F32 -> F16) in a same-size copy: refused, then the good
    file under the same name converts into its own folder."""
    import struct

    from engine.backends.mlx.loader import resolve_model
    from engine.models.gguf_check import check_gguf

    monkeypatch.setenv("LOGITSCOPE_MODELS_DIR", str(tmp_path / "models"))
    bad = tmp_path / "dl" / smollm_gguf.name
    bad.parent.mkdir()
    shutil.copy(smollm_gguf, bad)
    t = next(t for t in check_gguf(bad).tensors if t.name == "blk.3.attn_norm.weight")
    with open(bad, "r+b") as f:
        f.seek(t.header_pos + 4 + 8 * len(t.shape))
        f.write(struct.pack("<I", 1))  # F16
    assert bad.stat().st_size == smollm_gguf.stat().st_size
    with pytest.raises(ModelError, match="damaged"):
        resolve_model(str(bad))
    assert (
        not (tmp_path / "models").exists()
        or not any((tmp_path / "models").iterdir())
        or all(p.name.startswith(".") for p in (tmp_path / "models").iterdir())
    )
    shutil.copy(smollm_gguf, bad)
    folder = resolve_model(str(bad))
    assert (folder / "model.safetensors").exists()


def test_a_conversion_that_collapses_is_not_kept(tmp_path, monkeypatch):
    """A model predicting the same token everywhere (as a damaged file did) is refused."""
    import mlx.core as mx
    import mlx.nn as nn
    import mlx_lm

    from engine.backends.mlx import model_check

    gguf = write_tiny_gguf(tmp_path / "flat.gguf", seed=3)
    real_load = mlx_lm.load

    class Flat(nn.Module):  # the loaded model, its logits flattened
        def __init__(self, model):
            super().__init__()
            self.model = model

        def __call__(self, x, cache=None):
            logits = self.model(x)
            return mx.zeros_like(logits) + mx.arange(logits.shape[-1])  # argmax: last id

    def collapsed_model(folder):
        model, tok = real_load(folder)
        return Flat(model), tok

    monkeypatch.setattr("mlx_lm.load", collapsed_model)
    from engine.backends.mlx.gguf_convert import convert_gguf

    with pytest.raises(ModelError, match="at every position"):
        convert_gguf(gguf, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert model_check.PROBE  # the check ran on a real probe sentence


# -- 10: malformed GGUFs give one-line errors, never a crash ------------------------------
def test_fuzzed_gguf_files_fail_cleanly(tmp_path):
    base = write_tiny_gguf(tmp_path / "base.gguf", seed=4)
    work = tmp_path / "cases"
    work.mkdir()
    env = {**os.environ, "LOGITSCOPE_MODELS_DIR": str(tmp_path / "models")}
    p = subprocess.run(
        [sys.executable, "-m", "tests.engine.gguf_fuzz_worker", str(base), str(work), "240", "7"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert p.returncode == 0, f"the converter crashed: {p.returncode}\n{p.stderr[-2000:]}"
    results = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(results) == 240
    bad = [r for r in results if r["outcome"] == "traceback"]
    assert not bad, bad[:3]
    errors = [r["message"] for r in results if r["outcome"] == "error"]
    assert len(errors) >= 200
    for m in errors:
        assert "\n" not in m and len(m) < 400 and "Traceback" not in m
        assert "GGUF" in m or "convert" in m or "tensor" in m, m


@pytest.mark.parametrize("missing", ["head_count", "context_length", "block_count"])
def test_missing_metadata_is_named(tmp_path, missing):
    from engine.models.gguf_check import check_gguf

    path = write_tiny_gguf(tmp_path / "m.gguf", skip_keys=(missing,))
    with pytest.raises(ModelError, match=f"lacks llama.*{missing.split('_')[0]}"):
        check_gguf(path)


# -- 8: a read-only data folder: the run still reaches the user, told in one sentence ------
@pytest.fixture
def read_only_history(monkeypatch):
    import errno

    def refuse(self):
        raise OSError(errno.EROFS, "Read-only file system", str(self.path))

    return lambda: monkeypatch.setattr(Journal, "_open_fd", refuse)


def test_generate_with_a_read_only_history_still_answers(read_only_history, capsys, tiny_model_dir):
    from engine.cli import main

    read_only_history()
    code = main(
        [
            "generate",
            "--model",
            str(tiny_model_dir),
            "--prompt",
            "hello",
            "--max-tokens",
            "4",
            "--temp",
            "0",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and out.strip()  # the answer was printed
    warnings = [ln for ln in err.splitlines() if ln.startswith("logitscope: warning")]
    assert len(warnings) == 1 and "read-only" in warnings[0] and "not in the history" in warnings[0]
    assert "Traceback" not in err


def test_import_into_a_read_only_history_is_one_line(read_only_history, capsys, tmp_path, records):
    from engine.cli import main

    doc = to_json(read_session(_session(tmp_path, records, ("p",)).path))
    (tmp_path / "x.json").write_text(doc.replace('"session_id": "', '"session_id": "z'))
    read_only_history()
    assert main(["import", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "read-only" in err and "Traceback" not in err
