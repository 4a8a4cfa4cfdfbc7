"""Reading a text on a server (engine/backends/openai/read_remote.py) against a fake
server's echoed prompt log-probabilities, a server that cannot, and the read's
statistics (engine/reading/read_stats.py) on hand-made records."""

from __future__ import annotations

import math

import pytest

from engine.backends.openai.backend import OpenAIBackend
from engine.errors import ServerError
from engine.reading.read_stats import ReadTally, bits_per_byte, perplexity
from engine.reading.request import ReadRequest
from engine.run.read_summary import rank_bucket
from engine.run.records import TokenRecord, TopToken
from tests.fake_server import FakeServer, vllm_models

CONTEXT, TEXT = "Q:", " Sydney is big."
TOKENS = ["Q", ":", " Sydney", " is", " big", ".", "!"]  # the last one is generated
OFFSETS = [0, 1, 2, 9, 12, 16, 17]
LOGPROBS = [None, -3.0, -6.5, -0.5, -2.25, -0.125, -1.0]
TOPS = [
    None,
    {":": -3.0, " A": -1.0},
    {" Canberra": -0.5, " Melbourne": -1.5, " Sydney": -6.5},
    {" is": -0.5},
    {" old": -0.75, " small": -1.0, " big": -2.25},
    {".": -0.125},
    {"!": -1.0},
]


@pytest.fixture
def server():
    s = FakeServer()
    s.script.models = vllm_models()
    yield s
    s.close()


@pytest.fixture
def backend(server):
    b = OpenAIBackend()
    b.load(f"{server.url}#Qwen/Qwen3-0.6B", lambda *_: None)
    yield b
    b.close()


def test_a_server_that_echoes_prompt_logprobs_is_read(server, backend):
    lp = {"tokens": TOKENS, "token_logprobs": LOGPROBS, "top_logprobs": TOPS}
    server.script.json_body = {
        "choices": [{"text": "", "logprobs": {**lp, "text_offset": OFFSETS}}]
    }
    seen = []
    request = ReadRequest(TEXT, context=CONTEXT, top_n=3)
    records = list(backend.read(request, lambda: False, lambda d, t: seen.append((d, t))))
    body = server.requests[-1]["body"]
    assert server.requests[-1]["path"].endswith("/completions")
    assert body["echo"] is True and body["prompt"] == CONTEXT + TEXT and body["logprobs"] == 3
    tokens = [r for r in records if r.type == "token"]
    assert [t.text for t in tokens] == [" Sydney", " is", " big", "."]
    assert [t.logprob for t in tokens] == [-6.5, -0.5, -2.25, -0.125]
    assert [t.rank for t in tokens] == [3, 1, 3, 1] and all(t.read for t in tokens)
    done = records[-1]
    assert done.finish_reason == "read" and done.text == TEXT and done.prompt_tokens == 2
    s = done.reading
    nll = 6.5 + 0.5 + 2.25 + 0.125
    assert s.perplexity == pytest.approx(math.exp(nll / 4), rel=1e-12)
    assert s.bits_per_byte == pytest.approx(nll / math.log(2) / len(TEXT.encode()), rel=1e-12)
    assert s.rank_buckets == (4, 0, 0, 0) and seen == [(4, 4)]
    assert s.surprising[0].text == " Sydney" and s.surprising[0].expected == " Canberra"


@pytest.mark.parametrize(
    "body",
    [
        {"choices": [{"text": "!", "logprobs": None}]},  # no echo: only the answer
        {"choices": [{"text": "!", "logprobs": {"tokens": ["!"], "token_logprobs": [-1.0]}}]},
    ],
)
def test_a_server_that_cannot_says_so(server, backend, body):
    server.script.json_body = body
    with pytest.raises(ServerError, match="cannot return the log-probabilities of a given text"):
        list(backend.read(ReadRequest(TEXT), lambda: False, lambda *_: None))


def test_a_refusing_server_says_so_with_its_answer(server, backend):
    server.script.status, server.script.error_body = (
        400,
        '{"error": {"message": "echo unsupported"}}',
    )
    with pytest.raises(ServerError, match="cannot return the log-probabilities.*echo unsupported"):
        list(backend.read(ReadRequest(TEXT), lambda: False, lambda *_: None))


def _tok(step: int, logprob: float, rank: int, text: str = "x") -> TokenRecord:
    top = (TopToken(7, "best", -0.1),)
    return TokenRecord(
        step, 1, text, logprob, math.exp(logprob), logprob, top, top, 1.0, 1.0, 0.0, 0.0, 1,
        bytes=tuple(text.encode()), rank=rank, read=True,
    )  # fmt: skip


def test_the_tally_counts_buckets_and_keeps_the_most_surprising():
    lps = [-0.5, -9.0, -2.0, -9.0, -0.1, -4.0]
    ranks = [1, 1001, 10, 1000, 11, 100]
    tally = ReadTally(keep=3)
    for i, (lp, rank) in enumerate(zip(lps, ranks, strict=True)):
        tally.add(_tok(i, lp, rank, "ab"))
    s = tally.summary(
        context_tokens=1, start_token="<s>", window=None, window_keep=None,
        context_length=64, read_s=2.0, text_bytes=12,
    )  # fmt: skip
    assert s.rank_buckets == (2, 2, 1, 1)
    assert [t.step for t in s.surprising] == [1, 3, 5]  # ties: the earlier first
    assert s.perplexity == pytest.approx(perplexity(lps), rel=1e-15)
    assert s.bits_per_byte == pytest.approx(bits_per_byte(lps, 12), rel=1e-15)
    assert s.read_tps == 3.0 and s.surprising[0].expected == "best"
    assert [rank_bucket(r) for r in (1, 10, 11, 100, 101, 1000, 1001)] == [0, 0, 1, 1, 2, 2, 3]
    assert perplexity([]) is None and bits_per_byte([-1.0], 0) is None
