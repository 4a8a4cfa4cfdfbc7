"""The second real model: Gemma 3 270M from its Q4_K_M GGUF on PyPI (gemma3
architecture, SentencePiece vocabulary, Q4_K/Q5_0/Q6_K/Q8_0 tensors)."""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.generate import generate_records
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings

QUESTION = "What is the capital of France?"


def collect(records) -> RunResult:
    result = RunResult()
    for r in records:
        result.add(r)
    return result


def test_conversion_says_what_the_file_was_and_became(gemma_path):
    from engine.models.catalogue import inspect_model

    config = json.loads((gemma_path / "config.json").read_text())
    source = config["logitscope_source"]
    assert config["model_type"] == "gemma3_text" and config["num_hidden_layers"] == 18
    assert source["tensor_types"] == {"F32": 109, "Q8_0": 10, "Q5_0": 81, "Q4_K": 27, "Q6_K": 9}
    assert source["label"] == ("GGUF Q4_K_M → MLX 4/5/8-bit, group 32 (Q6_K re-quantized to 8-bit)")
    assert source["tokenizer_check"]["mismatches"] == []
    assert source["license"] == "gemma"
    info = inspect_model(gemma_path)
    assert info.quantization == source["label"] and info.context_length == 32768


def test_greedy_answer_names_paris(gemma):
    """google/gemma-3-270m is the pretrained (not instruction-tuned) model: it
    answers in raw completion mode."""
    settings = SamplingSettings(temperature=0, max_tokens=12, chat_template=False)
    r = collect(generate_records(gemma, QUESTION, settings))
    assert "Paris" in r.done.text


def test_its_chat_template_is_gemmas(gemma):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    text = gemma.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    ids = gemma.tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    assert ids[:2] == [2, 105] and ids.count(2) == 1  # one <bos>, <start_of_turn> whole
    assert 106 in gemma.tokenizer.eos_token_ids  # <end_of_turn> ends a reply


def test_logprobs_equal_bare_mlx_lm(gemma, gemma_path):
    """The same greedy run through bare mlx-lm, step by step (to 1e-4) and
    teacher-forced in one pass (float16 activations: to 1e-2)."""
    from mlx_lm import load, stream_generate

    settings = SamplingSettings(temperature=0, max_tokens=6, chat_template=False)
    run = collect(generate_records(gemma, "The three primary colours are", settings))
    prompt = gemma.tokenizer.encode("The three primary colours are")
    chosen = [t.token_id for t in run.tokens]
    model, tok = load(str(gemma_path))
    bare = list(stream_generate(model, tok, mx.array(prompt), max_tokens=6))
    assert chosen == [b.token for b in bare]
    for t, b in zip(run.tokens, bare, strict=True):
        assert t.logprob == pytest.approx(b.logprobs[b.token].item(), abs=1e-4)
    logits = model(mx.array(prompt + chosen)[None])[0].astype(mx.float32)
    logprobs = np.array(logits - mx.logsumexp(logits, axis=-1, keepdims=True))
    start = len(prompt) - 1
    for i, t in enumerate(run.tokens):
        row = logprobs[start + i]
        assert t.token_id == int(row.argmax())
        assert t.logprob == pytest.approx(float(row[t.token_id]), abs=1e-2)
