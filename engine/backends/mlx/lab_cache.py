"""The prompt-cache experiment: one conversation turn run cold (the whole prompt
prefilled) and cached (the turns before it reused from the KV cache), alternated
over rounds so drift hits both; TTFTs and their ratio, and whether the two runs
chose the same tokens with the same logprobs."""

from __future__ import annotations

from engine.backends.mlx.generate import LoadedModel, generate_records
from engine.records import RunResult
from engine.settings import SamplingSettings

LONG_SYSTEM = (
    "You are a careful assistant for a museum of maritime history. Answer visitors' "
    "questions about ships, navigation, lighthouses and the people who built and sailed "
    "them. Keep answers short and concrete, name dates and places where you know them, "
    "and say plainly when you are not sure. Never invent exhibits or opening hours."
)
TURNS = ("When was the first lighthouse built?", "What fuel did it burn?")


def _run(lm: LoadedModel, prompt, settings: SamplingSettings) -> RunResult:
    result = RunResult()
    for record in generate_records(lm, prompt, settings):
        result.add(record)
    return result


def cache_experiment(lm: LoadedModel, system: str = LONG_SYSTEM, turns=TURNS,
                     tokens: int = 8, rounds: int = 3) -> dict:  # fmt: skip
    """Turn 2 of a conversation (system prompt, turn 1 and its answer before it) cold
    and cached; best TTFT of `rounds` each (noise only ever slows a run)."""
    base = SamplingSettings(temperature=0, max_tokens=tokens, seed=0, system_prompt=system)
    first = _run(lm, turns[0], base.with_(prompt_cache=False))
    messages = [{"role": "user", "content": turns[0]},
                {"role": "assistant", "content": first.done.text},
                {"role": "user", "content": turns[1]}]  # fmt: skip
    cold, cached = [], []
    for i in range(rounds):
        for side in ("cold", "cached") if i % 2 == 0 else ("cached", "cold"):
            if side == "cold":
                cold.append(_run(lm, messages, base.with_(prompt_cache=False)))
            else:  # the cache holds turn 1 as a conversation would have left it
                _run(lm, turns[0], base.with_(prompt_cache=False))
                cached.append(_run(lm, messages, base.with_(prompt_cache=True)))
    c0, c1 = min(cold, key=lambda r: r.done.ttft_s), min(cached, key=lambda r: r.done.ttft_s)
    same = [t.token_id for t in c0.tokens] == [t.token_id for t in c1.tokens]
    diff = max((abs(a.logprob - b.logprob) for a, b in zip(c0.tokens, c1.tokens, strict=False)),
               default=0.0)  # fmt: skip
    return {
        "prompt_tokens": c1.done.prompt_tokens, "cached_tokens": c1.done.cached_tokens,
        "cold_ttft_s": c0.done.ttft_s, "cached_ttft_s": c1.done.ttft_s,
        "ratio": c0.done.ttft_s / c1.done.ttft_s, "rounds": rounds,
        "cold_ttfts": [r.done.ttft_s for r in cold],
        "cached_ttfts": [r.done.ttft_s for r in cached],
        "same_tokens": same, "max_logprob_difference": diff, "compute": lm.compute,
    }  # fmt: skip
