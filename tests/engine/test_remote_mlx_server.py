"""The remote backend against a real mlx_lm.server running the default model (in
float32: tests/mlx_server.float32_copy)."""

from __future__ import annotations

import json

from engine.backends.mlx.generate import generate_records
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings
from tests.mlx_server import start_server

PROMPT = "What is the capital of France?"
GREEDY = SamplingSettings(temperature=0, max_tokens=10, seed=0, top_n=5)


def collect(records) -> RunResult:
    result = RunResult()
    for r in records:
        result.add(r)
    return result


def test_greedy_logprobs_equal_the_local_engine(mlx_server, engine_client, served_lm):
    """The server runs the default model's float32 weights as mlx-lm does: so does the
    local side here, on the same folder."""
    remote = collect(engine_client.generate(PROMPT, GREEDY, f"{mlx_server}#"))
    local = collect(generate_records(served_lm, PROMPT, GREEDY))
    assert remote.error is None, remote.error
    assert remote.model.backend == "openai" and remote.model.device.startswith("mlx_lm.server")
    assert remote.done.text == local.done.text and "Paris" in remote.done.text
    assert [t.token_id for t in remote.tokens] == [t.token_id for t in local.tokens]
    for r, lo in zip(remote.tokens, local.tokens, strict=True):
        assert abs(r.logprob - lo.logprob) < 1e-3, (r.step, r.logprob, lo.logprob)
        assert r.top[0].token_id == lo.top[0].token_id
    assert (
        remote.done.prompt_tokens is None or remote.done.prompt_tokens == local.done.prompt_tokens
    )


def test_command_line_against_the_server(mlx_server, capsys):
    from engine.cli import main
    from engine.run.records import record_from_dict

    assert (
        main(
            [
                "generate",
                "--endpoint",
                mlx_server,
                "--prompt",
                PROMPT,
                "--temp",
                "0",
                "--max-tokens",
                "10",
                "--json",
                "--no-log",
            ]
        )
        == 0
    )
    result = collect(
        record_from_dict(json.loads(line)) for line in capsys.readouterr().out.splitlines()
    )
    assert "Paris" in result.done.text and result.tokens[0].logprob is not None
    assert main(["models", "--endpoint", mlx_server, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["server"] == "mlx_lm.server" and len(listing["models"]) == 1


def test_cancel_mid_stream(mlx_server, engine_client):
    settings = SamplingSettings(temperature=0, max_tokens=200, top_n=5)
    result = RunResult()
    for record in engine_client.generate("Tell me a long story.", settings, f"{mlx_server}#"):
        result.add(record)
        if len(result.tokens) == 3:
            engine_client.cancel()
    assert result.done.finish_reason == "cancelled"
    assert 3 <= len(result.tokens) < 30 and result.done.text


def test_server_stopped_mid_stream_keeps_the_partial_answer(served_model, tmp_path, engine_client):
    proc, url = start_server(served_model, tmp_path)
    settings = SamplingSettings(temperature=0, max_tokens=300, top_n=5)
    result = RunResult()
    try:
        for record in engine_client.generate("Tell me a long story.", settings, f"{url}#"):
            result.add(record)
            if len(result.tokens) == 3:
                proc.kill()
    finally:
        proc.kill()
        proc.wait(10)
    assert result.done.finish_reason == "error", result.done
    assert len(result.tokens) >= 3 and result.done.text
    assert "partial answer is kept" in result.done.error


def test_sampled_run_gets_logprobs_for_every_token(mlx_server, engine_client):
    """At T=0.8 a drawn token can fall outside the server's top 10: the ids pass
    still gives every token its id and log-probability."""
    settings = SamplingSettings(temperature=0.8, max_tokens=12, seed=7, top_n=5)
    result = collect(
        engine_client.generate("Write a haiku about the sea.", settings, f"{mlx_server}#")
    )
    assert result.done.finish_reason in ("eos", "length")
    assert "".join(t.text for t in result.tokens) == result.done.text
    assert all(t.logprob is not None and t.token_id >= 0 for t in result.tokens)
    for t in result.tokens:  # the top list is sorted and holds the chosen token when it fits
        lps = [c.logprob for c in t.top]
        assert lps == sorted(lps, reverse=True)
        if t.logprob >= lps[-1]:
            assert t.token_id in [c.token_id for c in t.top]


def test_json_sends_each_step_once(mlx_server, capsys):
    """mlx_lm.server's log-probabilities come in a second pass: `--json` prints each
    step once, with them (not first with stand-in ids and again with the real ones)."""
    from engine.cli import main

    args = ["generate", "--endpoint", mlx_server, "--prompt", PROMPT, "--temp", "0"]
    assert main([*args, "--max-tokens", "4", "--json", "--no-log"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    tokens = [r for r in lines if r["type"] == "token"]
    done = lines[-1]
    assert [t["step"] for t in tokens] == [0, 1, 2, 3] and done["type"] == "done"
    assert all(t["token_id"] >= 0 and t["logprob"] is not None for t in tokens)
    assert [t["context_tokens"] for t in tokens] == [
        done["prompt_tokens"] + k for k in (1, 2, 3, 4)
    ]
    assert "".join(t["text"] for t in tokens) == done["text"]
    assert not any("revision" in r for r in lines)
