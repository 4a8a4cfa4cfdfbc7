"""The `llm` command-line tool, configured for an OpenAI-compatible model, works
against `logitscope serve` unchanged (streamed and not)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.backends.mlx.generate import generate_records
from engine.run.settings import SamplingSettings
from engine.serve.server import ServeOptions, start


@pytest.fixture(scope="module")
def server(default_model_path):
    handle = start(ServeOptions(model=str(default_model_path), port=0, max_batch=2))
    yield handle
    handle.stop()


def test_llm_cli_against_the_server(server, tmp_path):
    name = server.served.record.name
    (tmp_path / "extra-openai-models.yaml").write_text(
        f"- model_id: logitscope\n  model_name: {name}\n  api_base: {server.url}\n"
    )
    env = {**os.environ, "LLM_USER_PATH": str(tmp_path), "OPENAI_API_KEY": "unused"}
    llm = str(Path(sys.executable).with_name("llm"))
    local = generate_records(
        server.served.scheduler.lm, "Name a colour.", SamplingSettings(temperature=0, max_tokens=4)
    )
    expected = next(r for r in local if r.type == "done").text
    for extra in ([], ["--no-stream"]):
        out = subprocess.run(
            [llm, "-m", "logitscope", "-o", "temperature", "0", "-o", "max_tokens", "4",
             *extra, "Name a colour."],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected.strip()
