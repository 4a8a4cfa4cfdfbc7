"""The remote backend against a real mlx_lm.server running the default model."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from engine.backends.mlx.generate import generate_records
from engine.records import RunResult
from engine.settings import SamplingSettings

PROMPT = "What is the capital of France?"
GREEDY = SamplingSettings(temperature=0, max_tokens=10, seed=0, top_n=5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model_path, tmp_path):
    port = _free_port()
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path)}  # its /v1/models scans this cache
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlx_lm.server", "--model", str(model_path),
         "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("mlx_lm.server did not start within 90 s")


@pytest.fixture(scope="module")
def mlx_server(default_model_path, tmp_path_factory):
    proc, url = start_server(default_model_path, tmp_path_factory.mktemp("hf"))
    yield url
    proc.kill()
    proc.wait(10)


def collect(records) -> RunResult:
    result = RunResult()
    for r in records:
        result.add(r)
    return result


def test_greedy_logprobs_equal_the_local_engine(mlx_server, engine_client, smollm):
    remote = collect(engine_client.generate(PROMPT, GREEDY, f"{mlx_server}#"))
    local = collect(generate_records(smollm, PROMPT, GREEDY))
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
    from engine.records import record_from_dict

    assert main(["generate", "--endpoint", mlx_server, "--prompt", PROMPT, "--temp", "0",
                 "--max-tokens", "10", "--json", "--no-log"]) == 0  # fmt: skip
    result = collect(record_from_dict(json.loads(line))
                     for line in capsys.readouterr().out.splitlines())  # fmt: skip
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


def test_server_stopped_mid_stream_keeps_the_partial_answer(default_model_path, tmp_path,
                                                            engine_client):  # fmt: skip
    proc, url = start_server(default_model_path, tmp_path)
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
