"""`logitscope read`: what it prints, its JSON records, its journal entry, and one
line with exit 2 for every kind of bad input."""

from __future__ import annotations

import io
import json
import math

import pytest

from engine.cli import main

TEXT = "The capital of Australia is Sydney. The capital of France is Paris."


def test_read_prints_the_figures_and_journals_the_run(default_model_path, capsys):
    from engine.sessions.session_log import read_session, sessions_dir

    before = set(sessions_dir().glob("*.jsonl")) if sessions_dir().exists() else set()
    assert main(["read", "--text", TEXT, "--model", str(default_model_path), "--chunk", "5"]) == 0
    out = capsys.readouterr().out
    assert "perplexity" in out and "bits per byte" in out and "top 10:" in out
    assert "Most surprising tokens:" in out and "fits the 8,192-token context" in out
    new = set(sessions_dir().glob("*.jsonl")) - before
    assert len(new) == 1
    path = new.pop()
    session = read_session(path)  # the history's reader: every line passes the schema
    assert session.bad_lines == 0 and session.runs[0].done.reading.tokens > 0
    assert session.runs[0].prompt == TEXT  # journaled as the window journals a read
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    records = [x["record"] for x in lines if "record" in x]
    done = [r for r in records if r.get("type") == "done"]
    tokens = [r for r in records if r.get("type") == "token"]
    assert done and done[0]["finish_reason"] == "read" and done[0]["text"] == TEXT
    assert tokens and all(t["read"] and t["rank"] >= 1 for t in tokens)
    assert done[0]["reading"]["tokens"] == len(tokens)
    shown = f"{done[0]['reading']['perplexity']:.3f}"
    assert f"perplexity     {shown}" in out


def test_read_json_from_stdin(default_model_path, capsys, monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO(TEXT.encode()), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    args = ["read", "-", "--json", "--no-log", "--model", str(default_model_path)]
    assert main([*args, "--context", "Geography quiz:"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    tokens = [r for r in rows if r["type"] == "token"]
    done = rows[-1]
    assert done["type"] == "done" and done["text"] == TEXT
    assert len(tokens) == done["reading"]["tokens"] == done["generated_tokens"]
    assert len(tokens[0]["sweep_logz"]) == 20  # the temperature chart's data, with --json
    mean = -sum(t["logprob"] for t in tokens) / len(tokens)
    assert done["reading"]["perplexity"] == pytest.approx(math.exp(mean), rel=1e-12)
    assert done["reading"]["start_token"] == "" and done["prompt_tokens"] > 1


@pytest.mark.parametrize(
    "kind, message",
    [
        ("missing", "not found"),
        ("empty", "is empty"),
        ("binary", "binary file"),
        ("latin1", "not UTF-8"),
        ("folder", "a folder"),
        ("both", "not both"),
        ("neither", "not both"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, kind, message):
    path = tmp_path / "t.txt"
    data = {"empty": b"  \n", "binary": b"\x7fELF\x00\x01", "latin1": "caf\xe9".encode("latin-1")}
    if kind in data:
        path.write_bytes(data[kind])
    args = {"folder": [str(tmp_path)], "both": [str(path), "--text", "x"], "neither": []}
    assert main(["read", *args.get(kind, [str(path)])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("logitscope: error:") and message in err[0]


def test_an_unknown_model_is_one_line_and_exit_2(tmp_path, capsys, default_model_path):
    assert main(["read", "--text", "Hi there", "--no-log", "--model", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("logitscope: error:")
