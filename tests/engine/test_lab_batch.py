"""Batching on the real default model: every batched answer equals that prompt's
own unbatched greedy run, and throughput is what the timestamps say."""

from __future__ import annotations

import pytest

from engine.backends.mlx.lab_batch import PROMPTS, batch_experiment
from engine.backends.mlx.lab_quant import greedy_answer


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
    alone = [[t for t in greedy_answer(smollm.model, p, 8, eos) if t not in eos] for p in ids]
    for size, answers in data["answers"].items():
        assert answers == alone, size
    for row in data["rows"]:
        assert row["generated_tokens"] == sum(len(a) for a in alone)
        assert row["total_tps"] == pytest.approx(row["generated_tokens"] / row["seconds"])
