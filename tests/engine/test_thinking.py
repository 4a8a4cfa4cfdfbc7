"""Thinking tokens: the tracker, a tiny model whose template opens `<think>`, the
default model (no markers), and a server's `reasoning_content` / `reasoning` /
`thinking` fields."""

from __future__ import annotations

import pytest

from engine.backends.base import open_backend
from engine.backends.mlx.generate import generate_records
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings
from engine.run.thinking import ThinkMarkers, ThinkTracker, find_markers
from tests.fake_server import FakeServer, Script, finish_chunk, vllm_chunk, vllm_models

S, E = 900, 901


def expected_flags(prompt_ids, ids, start, end):
    """An independent scan: inside from the last unclosed start; markers included."""
    inside = False
    for t in prompt_ids:
        inside = True if t == start else False if t == end else inside
    flags = []
    for t in ids:
        if t == start:
            inside = True
            flags.append(True)
        elif t == end and inside:
            flags.append(True)
            inside = False
        else:
            flags.append(inside)
    return flags


@pytest.mark.parametrize(
    "prompt, ids",
    [
        ([1, 2], [3, S, 4, 5, E, 6, 7]),
        ([1, S, 2], [3, 4, E, 6]),  # the template opened the block
        ([S, 1, E, 2], [3, 4]),  # a closed block in the prompt
        ([1], [S, E, S, 3, E, 4]),
    ],
)
def test_tracker_marks_the_block_and_its_markers(prompt, ids):
    tracker = ThinkTracker(ThinkMarkers((S,), (E,), "<think>", "</think>"), prompt)
    assert [tracker.add(t) for t in ids] == expected_flags(prompt, ids, S, E)
    assert tracker.count == sum(expected_flags(prompt, ids, S, E))


def test_multi_token_markers():
    m = ThinkMarkers((7, 8), (9, 10), "<|channel>thought", "<channel|>")
    tracker = ThinkTracker(m, [1, 2])
    flags = [tracker.add(t) for t in [3, 7, 8, 4, 5, 9, 10, 6]]
    assert flags == [False, False, True, True, True, True, True, False]


@pytest.fixture(scope="module")
def thinking_lm(tmp_path_factory):
    from engine.backends.mlx.loader import load_model
    from tests.tiny_model import build_tiny_model

    folder = build_tiny_model(tmp_path_factory.mktemp("think") / "tiny-think", thinking=True)
    lm, _info, _s = load_model(folder)
    return lm


def run(lm, prompt, max_tokens=12, **kw) -> RunResult:
    result = RunResult()
    settings = SamplingSettings(temperature=0, max_tokens=max_tokens, seed=1, **kw)
    for r in generate_records(lm, prompt, settings):
        result.add(r)
    return result


def test_a_template_that_opens_the_block_makes_the_output_thinking(thinking_lm):
    markers = find_markers(thinking_lm.tokenizer)
    vocab = thinking_lm.tokenizer.vocab
    assert markers.start == (vocab["<think>"],) and markers.end == (vocab["</think>"],)
    r = run(thinking_lm, "Why is the sky blue?")
    text = thinking_lm.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Why is the sky blue?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    prompt_ids = thinking_lm.tokenizer.encode(text, add_special_tokens=False)
    ids = [t.token_id for t in r.tokens if not t.eos]
    flags = expected_flags(prompt_ids, ids, markers.start[0], markers.end[0])
    assert flags[0] is True  # the block was open when generation began
    assert [t.thinking for t in r.tokens if not t.eos] == flags
    assert r.done.thinking_tokens == sum(flags)


def test_raw_text_with_a_closed_block_is_not_thinking(thinking_lm):
    r = run(thinking_lm, "<think>hmm</think> The answer:", chat_template=False)
    markers = find_markers(thinking_lm.tokenizer)
    prompt_ids = thinking_lm.tokenizer.encode("<think>hmm</think> The answer:")
    ids = [t.token_id for t in r.tokens if not t.eos]
    assert [t.thinking for t in r.tokens if not t.eos] == expected_flags(
        prompt_ids, ids, markers.start[0], markers.end[0]
    )


def test_the_default_model_has_no_thinking_markers(smollm):
    assert find_markers(smollm.tokenizer) is None
    r = run(smollm, "Hi", max_tokens=2)
    assert r.tokens and not any(t.thinking for t in r.tokens) and r.done.thinking_tokens == 0


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def reasoning_run(server, field: str) -> RunResult:
    def think(text):
        return {"choices": [{"index": 0, "delta": {field: text}, "finish_reason": None}]}

    server.script = Script(
        models=vllm_models(4096),
        events=[
            think("The user asks"),
            think(" about France."),
            vllm_chunk(" Paris", -0.1, [(" Paris", -0.1), (" Lyon", -2.5)]),
            vllm_chunk(".", -0.3, [(".", -0.3)]),
            finish_chunk("stop"),
        ],
    )
    backend = open_backend("openai")
    result = RunResult()
    try:
        result.add(backend.load(f"{server.url}#Qwen/Qwen3-0.6B", lambda *a: None))
        settings = SamplingSettings(temperature=0, max_tokens=8, seed=3, top_n=5)
        for record in backend.generate("What is the capital of France?", settings, lambda: False):
            result.add(record)
    finally:
        backend.close()
    return result


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "thinking"])
def test_a_servers_reasoning_field_streams_as_thinking(server, field):
    result = reasoning_run(server, field)
    assert [(t.text, t.thinking) for t in result.tokens] == [
        ("The user asks", True),
        (" about France.", True),
        (" Paris", False),
        (".", False),
    ]
    assert result.done.text == " Paris." and result.done.thinking_tokens == 2
    assert result.tokens[2].logprob == pytest.approx(-0.1)  # the answer's numbers unchanged


def test_thinking_survives_the_journal_and_exports_apart(server, tmp_path):
    from engine.run.records import to_dict
    from engine.sessions.export import to_markdown
    from engine.sessions.export_html import to_html
    from engine.sessions.journal import Journal, read_session

    result = reasoning_run(server, "reasoning_content")
    journal = Journal.create(tmp_path)
    run_id = journal.start_run("What is the capital of France?", {}, to_dict(result.model))
    for r in [*result.tokens, result.done]:
        journal.record(run_id, r)
    journal.close()
    session = read_session(journal.path)
    run = session.run(run_id)
    assert [t.thinking for t in run.tokens] == [True, True, False, False]
    assert run.done.thinking_tokens == 2
    md = to_markdown(session)
    assert (
        md.index("**Thinking**") < md.index("The user asks about France.") < md.index("**Answer**")
    )
    html = to_html(session)
    assert "<details open class='thinking'><summary>Thinking · 2 tokens</summary>" in html
