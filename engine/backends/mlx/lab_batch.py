"""Batching: the same prompt set answered at batch sizes 1, 2, 4, 8 with mlx-lm's
`batch_generate` (continuous batching, greedy). Throughput is recomputed from
wall-clock timestamps around each batch: total tokens/s (what a server sells)
rises with the batch while each sequence's own tokens/s falls, because decode
reads the weights once per step for the whole batch."""

from __future__ import annotations

import time

import mlx.core as mx

PROMPTS = (
    "Name a colour.",
    "What is 2 + 2?",
    "Say hello in French.",
    "Name a planet.",
    "What do bees make?",
    "Name a fruit.",
    "What is the opposite of hot?",
    "Name an ocean.",
)


def batch_experiment(
    lm, prompt_ids: list[list[int]], sizes=(1, 2, 4, 8), tokens: int = 16, progress=None
) -> dict:
    """Answer `prompt_ids` with mlx-lm's batch_generate at each batch size.

    Returns:
        {"rows": one timing row per size, "answers": size (str) -> token ids}.
    """
    from mlx_lm.generate import batch_generate

    rows = []
    answers: dict[int, list[list[int]]] = {}
    for n, size in enumerate(sizes):
        if progress:
            progress(f"Batch size {size}…", n / len(sizes))
        mx.reset_peak_memory()
        started = time.perf_counter()
        out: list[list[int]] = []
        generated = prompt_tokens = 0
        for i in range(0, len(prompt_ids), size):
            group = prompt_ids[i : i + size]
            result = batch_generate(
                lm.model,
                lm.tokenizer,
                group,
                max_tokens=tokens,
                return_token_ids=True,
                completion_batch_size=size,
                prefill_batch_size=size,
            )
            out += result.token_ids
            generated += sum(len(t) for t in result.token_ids)
            prompt_tokens += sum(len(p) for p in group)
        seconds = time.perf_counter() - started
        answers[size] = out
        rows.append(
            {
                "batch_size": size,
                "seconds": seconds,
                "generated_tokens": generated,
                "prompt_tokens": prompt_tokens,
                "total_tps": generated / seconds,
                "per_sequence_tps": generated / seconds / size,
                "peak_memory_bytes": int(mx.get_peak_memory()),
            }
        )
    return {"rows": rows, "answers": {str(k): v for k, v in answers.items()}}
