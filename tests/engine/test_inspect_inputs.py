"""`logitscope inspect` on input it cannot serve as asked: steps the answer cannot
reach and lens sizes that make no sense are refused at once (one line, exit 2); a
context longer than an inspection covers says so in the text; the sampling options
shape only the journey's funnel, never the answer inspected."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from engine.backends.mlx import inside
from engine.backends.mlx import journey as journey_module
from engine.backends.mlx.generate import generate_records
from engine.backends.mlx.inspect_step import inspect_step
from engine.backends.mlx.journey import journey, journey_record
from engine.cli.inspect_cmd import _print as print_record
from engine.errors import SettingsError
from engine.inside.inside_results import LayerChange, Projection
from engine.inside.inspect_request import InspectRequest
from engine.run.settings import SamplingSettings
from tests.engine.test_cli import cli

FRUIT = "Name a fruit."
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "dogs",
    "ran",
    "far",
    "away",
    "from",
    "home",
    "and",
    "every",
    "bird",
    "sang",
]


def _words(n: int) -> str:
    """`n` common words (about one SmolLM2 token each), the same every time."""
    rng = random.Random(1)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _one_line(p) -> str:
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("logitscope: error: "), p.stderr
    return lines[0]


@pytest.mark.parametrize(
    "options, said",
    [
        (["--what", "lens", "--step", "1000000"], "--step must be 0 to 1,024"),
        (["--what", "lens", "--step", "100000"], "--step must be 0 to 1,024"),
        (["--what", "journey", "--step", "1025"], "--step must be 0 to 1,024"),
        (["--what", "lens", "--step", "-1"], "--step must be 0 to 1,024"),
        (["--what", "lens", "--top-k", "0"], "must be 1 to 50, got 0"),
        (["--what", "lens", "--top-k", "-1"], "must be 1 to 50, got -1"),
        (["--what", "lens", "--top-k", "1000000000"], "must be 1 to 50, got 1000000000"),
    ],
)
def test_impossible_steps_and_lens_sizes_are_refused_at_once(options, said):
    p = cli("inspect", "--prompt", "hi", "--raw", *options, timeout=30)
    assert p.returncode == 2 and said in _one_line(p) and p.stdout == ""


def test_a_step_past_the_context_window_is_refused_before_answering(default_model_path):
    # 7,900 words: SmolLM2's 8,192-token window leaves 292 answer tokens
    p = cli("inspect", "--prompt", "-", "--raw", "--what", "lens", "--step", "500",
            stdin=_words(7_900), timeout=60)  # fmt: skip
    line = _one_line(p)
    assert p.returncode == 2 and p.stdout == ""
    assert "step 500 cannot exist: the model's context window of 8,192 tokens holds the " in line
    assert "and at most 292 answer tokens (steps 0 to 291)" in line


def test_the_engine_refuses_a_lens_size_before_any_pass():
    nothing = SimpleNamespace(lm=None, inspection=None)  # never reached
    for bad in (0, -1, 10**9, "5", True):
        with pytest.raises(SettingsError, match="the lens keeps 1 to 50 predictions"):
            inspect_step(nothing, "hi", None, InspectRequest("lens", top_k=bad))


@pytest.mark.parametrize("what", ["position", "lens", "attention"])
def test_a_long_prompt_says_it_was_truncated(smollm, monkeypatch, capsys, what):
    """The text says when only the context's end was read (here 8 positions of 20)."""
    monkeypatch.setattr(inside, "MAX_POSITIONS", 8)
    prompt = _words(20)
    n = len(smollm.tokenizer.encode(prompt))
    backend = SimpleNamespace(lm=smollm, inspection=None)
    record = inspect_step(
        backend, prompt, SamplingSettings(chat_template=False), InspectRequest(what)
    )
    assert record.data.truncated is True and record.data.context_tokens == n > 8
    print_record(record)
    head = capsys.readouterr().out.splitlines()[0]
    assert f" · the prompt · only the last 8 of its {n} tokens" in head


def test_the_journey_covers_the_end_of_a_long_context(smollm, monkeypatch):
    """A journey feeds the last MAX_POSITIONS tokens (here 8 of 16), says so, and keeps
    the step's own number; its sections are those of a journey over those 8 alone."""
    monkeypatch.setattr(journey_module, "MAX_POSITIONS", 8)
    ids = smollm.tokenizer.encode(_words(12), add_special_tokens=False)[:12] + [504, 28, 253, 30]
    settings = SamplingSettings(temperature=0.0)
    rec = journey_record(smollm, ids, 12, 4, 314, settings)
    data = rec.data
    assert data.truncated is True and data.context_tokens == 16
    assert list(rec.ids) == ids[-8:] and data.tokenization.prompt_tokens == 4
    assert data.iteration.next_step == 5  # step 4 of the answer, not 8 - 4
    alone = journey(smollm, ids[-8:], 4, 314, settings, ids)
    assert data.projection == Projection.from_dict(alone["projection"])
    assert data.layers == tuple(LayerChange.from_dict(r) for r in alone["layers"])
    short = journey_record(smollm, ids[-8:], 4, 4, 314, settings).data
    assert short.truncated is False and short.context_tokens == 8


def _journey(*extra) -> dict:
    p = cli("inspect", "--prompt", FRUIT, "--what", "journey", "--step", "2",
            "--json", *extra, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _tokens(lm, settings) -> list[int]:
    return [r.token_id for r in generate_records(lm, FRUIT, settings) if r.type == "token"]


def test_the_penalty_shapes_the_funnel_not_the_answer(smollm):
    """Greedy with a 1.3 penalty answers 'The most …'; plain greedy 'The fruit I …':
    the step inspected is plain greedy's, with and without the penalty."""
    plain_greedy = SamplingSettings(temperature=0.0, max_tokens=3, seed=0)
    greedy = _tokens(smollm, plain_greedy)
    assert _tokens(smollm, plain_greedy.with_(repetition_penalty=1.3))[1] != greedy[1]
    plain, penalised = _journey(), _journey("--repetition-penalty", "1.3")
    for rec in (plain, penalised):
        assert list(rec["ids"][-2:]) == greedy[:2] and rec["data"]["chosen"] == greedy[2]
    # the penalty shaped the funnel: its stage is there, and only there
    stages = [s["stage"] for s in penalised["data"]["sampling"]["stages"]]
    assert stages == ["raw", "repetition penalty", "greedy (argmax)"]
    assert [s["stage"] for s in plain["data"]["sampling"]["stages"]] == ["raw", "greedy (argmax)"]
