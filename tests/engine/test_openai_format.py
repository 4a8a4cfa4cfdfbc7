"""`generate --json --format openai` prints OpenAI chat.completion.chunk objects
with logprobs.content[] that tools reading OpenAI's output accept."""

from __future__ import annotations

import json
import subprocess
import sys

from engine.run.openai_chunks import ChunkWriter
from engine.run.records import TokenRecord, TopToken


def _check_entry(entry: dict, top: bool) -> None:
    assert set(entry) == (
        {"token", "logprob", "bytes", "top_logprobs"} if top else {"token", "logprob", "bytes"}
    )
    assert isinstance(entry["token"], str) and isinstance(entry["logprob"], float)
    assert entry["logprob"] <= 0 and all(
        isinstance(b, int) and 0 <= b < 256 for b in entry["bytes"]
    )
    raw = bytes(entry["bytes"])
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:  # part of a character: named by its bytes
        assert entry["token"] == "".join(f"<0x{x:02X}>" for x in raw)
    else:
        assert entry["token"].encode("utf-8") == raw  # the token's UTF-8 bytes


def check_chunk(chunk: dict) -> None:
    """Assert one object has OpenAI's chat.completion.chunk shape."""
    assert chunk["object"] == "chat.completion.chunk"
    assert chunk["id"].startswith("chatcmpl-") and isinstance(chunk["created"], int)
    assert isinstance(chunk["model"], str) and chunk["model"]
    for choice in chunk["choices"]:
        assert choice["index"] == 0 and isinstance(choice["delta"], dict)
        assert choice["finish_reason"] in (None, "stop", "length")
        if choice["logprobs"] is not None:
            for entry in choice["logprobs"]["content"]:
                _check_entry(entry, top=True)
                assert entry["top_logprobs"]
                for alt in entry["top_logprobs"]:
                    _check_entry(alt, top=False)


def test_generate_prints_openai_chunks_with_the_real_model(default_model_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "generate",
            "--prompt",
            "Say hi",
            "--temp",
            "0",
            "--max-tokens",
            "4",
            "--top-n",
            "3",
            "--json",
            "--format",
            "openai",
            "--no-log",
            "--model",
            str(default_model_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    chunks = [json.loads(line) for line in p.stdout.splitlines()]
    for chunk in chunks:
        check_chunk(chunk)
    tokens = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"] is None]
    assert len(tokens) == 4 and tokens[0]["choices"][0]["delta"]["role"] == "assistant"
    for c in tokens:
        (entry,) = c["choices"][0]["logprobs"]["content"]
        assert len(entry["top_logprobs"]) == 3
        assert entry["top_logprobs"][0]["logprob"] >= entry["top_logprobs"][-1]["logprob"]
        assert entry["token"] == c["choices"][0]["delta"]["content"]  # whole-UTF-8 tokens
        assert entry["token"] == entry["top_logprobs"][0]["token"]  # greedy: the likeliest
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 4
    assert len({c["id"] for c in chunks}) == 1


def test_a_split_utf8_token_is_named_alike_in_the_token_and_its_candidates():
    part = (0xE3, 0x81)
    record = TokenRecord(
        step=0,
        token_id=7,
        text="",
        logprob=-0.5,
        prob=0.6,
        sampled_logprob=-0.5,
        top=(TopToken(7, "<0xE3><0x81>", -0.5, part), TopToken(9, "a", -1.0, (0x61,))),
        sampled_top=(),
        entropy=None,
        sampled_entropy=None,
        elapsed_s=0.1,
        latency_s=0.1,
        context_tokens=3,
        bytes=part,
    )
    writer = ChunkWriter("x", model="m", created=1)
    (chunk,) = writer.chunks(record)
    check_chunk(chunk)
    (entry,) = chunk["choices"][0]["logprobs"]["content"]
    assert chunk["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert entry["token"] == entry["top_logprobs"][0]["token"] == "<0xE3><0x81>"
    assert entry["bytes"] == entry["top_logprobs"][0]["bytes"] == [0xE3, 0x81]
    assert entry["top_logprobs"][1] == {"token": "a", "logprob": -1.0, "bytes": [0x61]}
