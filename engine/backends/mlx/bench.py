"""The bare-mlx-lm side of `logitscope bench` (engine/cli/bench.py runs both sides).

Decode tok/s is measured where the tokens arrive, as for the engine: (tokens
after the first) / (time from the first token to the last), with the one
formula in engine.run.series. Prefill tok/s is mlx-lm's own figure for a raw prompt
of PREFILL_TOKENS (128) tokens, or as many as `bench --prefill-tokens` asks.
"""

from __future__ import annotations

import time

from engine.run.series import decode_rate

BENCH_PROMPT = "Write a long story about a dragon who learns to bake bread."
PREFILL_TOKENS = 128
_FILLER = (
    "The harbour town woke slowly: gulls over the water, nets on the quay, bread in "
    "the ovens and the first boats going out past the lighthouse. "
)


def decode_tps(stamps: list[float]) -> float:
    """Tokens per second after the first token, from arrival timestamps (0 if < 2)."""
    return decode_rate(stamps) or 0.0


def bare_decode(model, tokenizer, prompt_text: str, max_tokens: int) -> tuple[float, list]:
    """Greedy decode with plain mlx-lm `stream_generate`, for comparison.

    Returns:
        (decode tokens per second, the generated token ids).
    """
    from mlx_lm import stream_generate

    stamps, ids = [], []
    for r in stream_generate(model, tokenizer, prompt_text, max_tokens=max_tokens):
        if r.finish_reason in (None, "length"):  # a "stop" yield carries no token
            stamps.append(time.perf_counter())
            ids.append(int(r.token))
    return decode_tps(stamps), ids


def bare_prefill(model, tokenizer, ids: list[int]) -> float:
    """Prompt tokens per second of plain mlx-lm on `ids` (0.0 if it yields nothing)."""
    from mlx_lm import stream_generate

    for r in stream_generate(model, tokenizer, ids, max_tokens=1):
        return float(r.prompt_tps)
    return 0.0


def bare_setup(folder, prefill_tokens: int = PREFILL_TOKENS):
    """mlx-lm's own load of `folder` and the bench's prompts as it tokenizes them
    (the raw prompt for the prefill figure about `prefill_tokens` long).

    Returns:
        (model, tokenizer, chat prompt text, long raw text, its token ids).
    """
    from mlx_lm import load

    from engine.run.chat_template import apply

    model, tokenizer = load(str(folder))
    prompt_text = apply(tokenizer, [{"role": "user", "content": BENCH_PROMPT}], True)
    repeats = 1 + prefill_tokens // 20  # the filler is ~30 tokens
    long_ids = tokenizer.encode(_FILLER * repeats, add_special_tokens=False)[:prefill_tokens]
    long_text = tokenizer.decode(long_ids)
    long_ids = tokenizer.encode(long_text, add_special_tokens=False)  # what the engine sees
    return model, tokenizer, prompt_text, long_text, long_ids
