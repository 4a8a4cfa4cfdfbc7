"""`logitscope branch` and `sample` as a person runs them, and the branch tree through
export and import: the same parents, steps and tokens after a round trip."""

from __future__ import annotations

import json

import pytest

from engine.backends.mlx.generate import generate_records
from engine.run.continuation import continuation_from
from engine.run.settings import SamplingSettings
from engine.sessions.export import render
from engine.sessions.journal import read_session, sessions_dir
from engine.sessions.session_import import import_json
from tests.engine.test_cli import cli

PROMPT = "Name a fruit."


@pytest.fixture(scope="module")
def parent(default_model_path):
    """One greedy parent run made by `logitscope generate` (its session's path and run id),
    shared by both tests: each generate costs a CLI process and an engine start."""
    before = set(sessions_dir().glob("*.jsonl"))
    p = cli("generate", "--prompt", PROMPT, "--temp", "0", "--max-tokens", "6", "--json")
    assert p.returncode == 0, p.stderr
    (path,) = set(sessions_dir().glob("*.jsonl")) - before
    return path, f"{path.stem}/1"


def _records(stdout: str) -> list[list[dict]]:
    """--json output split per new run: [branch line, records...] each."""
    runs: list[list[dict]] = []
    for line in stdout.splitlines():
        d = json.loads(line)
        if d["type"] == "branch":
            runs.append([d])
        else:
            runs[-1].append(d)
    return runs


def test_branch_and_sample_from_the_command_line(parent, smollm, tmp_path):
    path, parent_id = parent
    parent = read_session(path).run(parent_id)
    alt = parent.tokens[2].top[1]

    b = cli("branch", parent_id, "--step", "2", "--token-id", str(alt.token_id), "--json")
    assert b.returncode == 0, b.stderr
    ((head, *recs),) = _records(b.stdout)
    assert head["parent"] == parent_id and head["step"] == 2 and head["kind"] == "forced"
    tokens = [r for r in recs if r["type"] == "token"]
    assert [t["token_id"] for t in tokens[:2]] == [t.token_id for t in parent.tokens[:2]]
    assert tokens[2]["token_id"] == alt.token_id and tokens[2]["forced"] is True
    assert [t["step"] for t in tokens] == list(range(len(tokens)))

    s = cli("sample", parent_id, "--step", "1", "--n", "3", "--seed", "40", "--temp", "0.9")
    assert s.returncode == 0, s.stderr
    s = cli(
        "sample", parent_id, "--step", "1", "--n", "3", "--seed", "40", "--temp", "0.9", "--json"
    )
    runs = _records(s.stdout)
    assert [r[0]["kind"] for r in runs] == ["sample"] * 3
    # the documented seed rule: sample i is a single run with seed S + i
    settings = SamplingSettings.from_dict(parent.settings_used).with_(temperature=0.9)
    cont = continuation_from(parent.tokens, 1)
    for i, run in enumerate(runs):
        single = [
            r.token_id
            for r in generate_records(
                smollm, PROMPT, settings.with_(seed=40 + i), lambda: False, cont
            )
            if r.type == "token"
        ]
        assert [r["token_id"] for r in run if r["type"] == "token"][1:] == single
        assert run[-1]["type"] == "done" and run[-1]["seed"] == 40 + i

    bad = cli("branch", parent_id, "--step", "1", "--token", " not-one-token-at-all")
    assert bad.returncode == 2 and "tokenizes as" in bad.stderr
    gone = cli("branch", parent_id + "0", "--step", "1", "--token-id", "5")
    assert gone.returncode == 2 and "has no run" in gone.stderr

    # the tree survives export -> import -> export
    session = read_session(path)
    first = json.loads(render("json", session))
    kids = [r for r in first["runs"] if r.get("branch")]
    assert len(kids) >= 4 and all(r["branch"]["parent"] == parent_id for r in kids)
    (tmp_path / "sessions").mkdir()
    result = import_json(_write(tmp_path / "s.json", first), tmp_path / "sessions")
    again = json.loads(render("json", result.session))

    def tree(doc):
        return [
            (
                r["run_id"],
                r.get("branch"),
                [t["token_id"] for t in r["records"] if t["type"] == "token"],
            )
            for r in doc["runs"]
        ]

    assert tree(again) == tree(first)
    md = render("md", result.session)
    assert "## Branches" in md and "at step 2, after" in md
    html = render("html", result.session)
    assert "<h2>Branches</h2>" in html and "branch of run" in html


def _write(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_refused_branches_leave_no_run_in_the_session(parent):
    """A branch or sample refused for its input prints one line, exits 2 and adds
    nothing to the parent's session: checked here or by the engine (the vocabulary).
    The session is the shared parent's: its bytes and runs as this test found them."""
    path, parent_id = parent
    journal = path.read_bytes()
    runs = len(read_session(path).runs)
    refused = [
        (["branch", "--token-id", "99999999"], "token id 99999999 is not in this model's"),
        (["branch", "--token", " not one token", "--json"], "it tokenizes as 3 tokens"),
        (["branch", "--token", ""], "--token is empty"),
        # argv bytes 0xff 0xfe: lone surrogates (an internal UnicodeEncodeError before)
        (["branch", "--token", "a\udcff\udcfe"], "--token holds bytes that are not valid"),
        (["branch", "--token-id", "-3"], "--token-id must be a token id (0 or more), not -3"),
        (["sample", "--n", "2", "--seed", "-5"], "--seed must be a whole number from 0 to"),
        (["sample", "--n", "2", "--seed", str(2**63 - 1)], "(sample i runs with seed S + i)"),
    ]
    for (command, *options), message in refused:
        r = cli(command, parent_id, "--step", "1", *options)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2, (options, r.stderr)
        assert len(lines) == 1 and lines[0].startswith("logitscope: error: "), lines
        assert message in lines[0]
        assert path.read_bytes() == journal, f"{options} left a run in the session"
    assert len(read_session(path).runs) == runs
