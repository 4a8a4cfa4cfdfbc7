"""Batching on the real default model: every batched answer is that prompt's own greedy
answer (what a run alone gives: each token the argmax after the ones before, checked in
one teacher-forced pass per prompt rather than eight runs of eight steps), and
throughput is what the timestamps say."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.lab_batch import PROMPTS, batch_experiment


def test_batched_answers_equal_unbatched_greedy_runs(smollm):
    ids = [
        smollm.tokenizer.apply_chat_template(
            [{"role": "user", "content": p}], add_generation_prompt=True
        )
        for p in PROMPTS
    ]
    # 4: two groups of four (the loop over groups), 8: one full batch; each pads prompts
    # of 34-38 tokens (size 1 ran the eight prompts one by one, as `alone` does below)
    data = batch_experiment(smollm, ids, sizes=(4, 8), tokens=8)
    eos = set(smollm.tokenizer.eos_token_ids)
    alone = data["answers"]["4"]
    for prompt, answer in zip(ids, alone, strict=True):  # each its prompt's greedy answer
        assert_greedy(smollm.model, prompt, answer, 8, eos)
    for size, answers in data["answers"].items():
        assert answers == alone, size
    for row in data["rows"]:
        assert row["generated_tokens"] == sum(len(a) for a in alone)
        assert row["total_tps"] == pytest.approx(row["generated_tokens"] / row["seconds"])


def assert_greedy(model, prompt: list[int], answer: list[int], most: int, eos: set[int]):
    """`answer` is the greedy continuation of `prompt` as a run alone gives it: each token
    the argmax after the ones before (one teacher-forced pass, bare MLX, float64 here),
    ending at `most` tokens or where the argmax is an end-of-sequence token (left out)."""
    logits = model(mx.array([prompt + answer]))[0, len(prompt) - 1 :]  # (A + 1, V)
    choice = np.argmax(np.array(logits.astype(mx.float32), dtype=np.float64), axis=-1)
    assert choice[: len(answer)].tolist() == answer
    assert len(answer) == most or int(choice[len(answer)]) in eos
