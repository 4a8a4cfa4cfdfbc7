"""The command line, run as a person runs it (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.run.settings import SamplingSettings

TOKEN_KEYS = {"type", "step", "token_id", "text", "logprob", "top", "entropy"}
DONE_KEYS = {
    "finish_reason",
    "prompt_tokens",
    "generated_tokens",
    "ttft_s",
    "prefill_tps",
    "decode_tps",
    "peak_memory_bytes",
    "kv_cache_bytes",
    "context_length",
}


def cli(*args, stdin=None, timeout=180):
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )


def test_generate_json_records(default_model_path):
    p = cli(
        "generate",
        "--prompt",
        "What is the capital of France?",
        "--temp",
        "0",
        "--max-tokens",
        "12",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in p.stdout.splitlines()]
    types = [r["type"] for r in records]
    assert types[-1] == "done" and "prefill" in types
    tokens = [r for r in records if r["type"] == "token"]
    assert tokens and all(set(t) >= TOKEN_KEYS for t in tokens)
    for t in tokens:
        assert set(t["top"][0]) >= {"token_id", "text", "logprob"}
        lps = [c["logprob"] for c in t["top"]]
        assert lps == sorted(lps, reverse=True)
    done = records[-1]
    assert set(done) >= DONE_KEYS
    assert done["generated_tokens"] == sum(not t["eos"] for t in tokens)
    assert tokens[-1]["eos"] and done["finish_reason"] == "eos"
    assert "".join(t["text"] for t in tokens).startswith(done["text"])
    assert "Paris" in done["text"]
    # The run is in the history, record for record.
    from engine.sessions.journal import list_sessions

    runs = [r for s in list_sessions()[0] for r in s.runs if r.prompt.startswith("What is the")]
    assert any(r.done is not None and r.done.text == done["text"] for r in runs)


def test_generate_plain_streams_text(default_model_path):
    p = cli(
        "generate",
        "--prompt",
        "What is the capital of France?",
        "--temp",
        "0",
        "--max-tokens",
        "12",
    )
    assert p.returncode == 0, p.stderr
    assert "Paris" in p.stdout
    assert "tok/s" in p.stderr


def test_models_json_lists_the_default(default_model_path):
    p = cli("models", "--json")
    assert p.returncode == 0, p.stderr
    models = json.loads(p.stdout)
    assert models[0]["name"] == "SmolLM2-135M-Instruct"
    assert models[0]["path"] == str(default_model_path.resolve())


@pytest.mark.parametrize(
    "args, message",
    [
        (["--prompt", ""], "the prompt is empty"),
        (["--prompt", "hi", "--temp", "-1"], "temperature must be between 0 and 2"),
        (["--prompt", "hi", "--top-p", "1.5"], "top-p must be in (0, 1]"),
        (["--prompt", "hi", "--top-p", "0"], "top-p must be in (0, 1]"),
        (
            ["--prompt", "hi", "--model", "/no/such/model"],
            "model '/no/such/model' not found",
        ),
    ],
)
def test_bad_input_gets_one_clear_line(args, message):
    p = cli("generate", *args)
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("logitscope: error: ") and message in last


def test_prompt_longer_than_context(tiny_model_dir):
    p = cli("generate", "--model", str(tiny_model_dir), "--prompt", "-", stdin="word " * 40)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "context window is 64: shorten it by" in p.stderr


def test_bench_reports_both_speeds_and_ratio(default_model_path):
    # A 16-token prefill: the bare side's is on the stored 4-bit weights (~10 tok/s here).
    p = cli(
        "bench",
        "--max-tokens",
        "6",
        "--rounds",
        "1",
        "--prefill-tokens",
        "16",
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["bare_decode_tps"] > 0 and r["engine_decode_tps"] > 0
    assert r["ratio"] == pytest.approx(r["engine_decode_tps"] / r["bare_decode_tps"])
    assert r["bare_prefill_tps"] > 0 and r["engine_prefill_tps"] > 0
    assert r["prefill_ratio"] == pytest.approx(r["engine_prefill_tps"] / r["bare_prefill_tps"])
    assert 12 <= r["prefill_prompt_tokens"] <= 20 and r["same_greedy_tokens"] is True
    assert r["engine_path"]  # which compute path the engine took, in words


@pytest.mark.parametrize("flag", ["--rounds", "--max-tokens", "--prefill-tokens"])
def test_bench_refuses_counts_too_small_to_measure(flag):
    p = cli("bench", flag, "0")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith(f"logitscope: error: {flag} must be")


def test_sessions_export_and_import_from_the_command_line(tmp_path, tiny_lm):
    from engine.backends.mlx.generate import generate_records
    from engine.sessions.journal import Journal

    journal = Journal.create()
    run_id = journal.start_run("hello", SamplingSettings(max_tokens=4).to_dict(), None)
    for rec in generate_records(tiny_lm, "hello", SamplingSettings(max_tokens=4, seed=1)):
        journal.record(run_id, rec)
    journal.close()
    p = cli("sessions", "--json")
    assert p.returncode == 0, p.stderr
    listed = {s["session_id"]: s for s in json.loads(p.stdout)}
    assert listed[journal.session_id]["runs"][0]["tokens"] == 4
    for fmt in ("html", "json", "jsonl", "csv", "md"):
        out = tmp_path / f"run.{fmt}"
        p = cli("export", run_id, "--format", fmt, "-o", str(out))
        assert p.returncode == 0, p.stderr
        assert out.stat().st_size > 100
    p = cli("import", str(tmp_path / "run.json"))
    assert p.returncode == 0 and journal.session_id in p.stdout
    p = cli("export", "no-such-session", "--format", "json", "-o", str(tmp_path / "x"))
    assert p.returncode == 2 and "no session 'no-such-session'" in p.stderr
    assert "Traceback" not in p.stderr


def test_export_of_an_id_naming_nothing_is_bad_input_in_one_safe_line():
    """An unknown id and --scale without html are bad input (exit 2; 1 before), and an id
    holding a terminal escape is shown escaped, not sent raw to the terminal."""
    for ref, words in [
        ("\x1b[2Jx", "no session '\\x1b[2Jx'"),
        ("/etc/passwd", "no session '/etc/passwd'"),
        ("a" * 5000, "no session '" + "a" * 60 + "'…"),
    ]:
        p = cli("export", ref, "--format", "md", "-o", "-")
        assert p.returncode == 2 and p.stdout == "", p.stderr
        assert p.stderr == f"logitscope: error: {words}: 'logitscope sessions' lists them\n"
    p = cli("bench", "--synthetic", "--prefill-tokens", "99999999999")
    assert p.returncode == 2, p.stderr  # an internal MemoryError before
    assert p.stderr == (
        "logitscope: error: --prefill-tokens must be from 2 to 32,768 (got 99,999,999,999)\n"
    )
