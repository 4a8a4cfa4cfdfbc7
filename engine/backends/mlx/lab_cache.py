"""The prompt-cache experiment: one conversation turn run cold (the whole prompt
prefilled) and cached (the turns before it reused from the KV cache), alternated
over rounds so drift hits both; TTFTs and their ratio, and whether the two runs
chose the same tokens with the same logprobs."""

from __future__ import annotations

from engine.backends.mlx.generate import LoadedModel, generate_records
from engine.backends.mlx.prompt_reuse import forget
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings

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


def _agreement(a: RunResult, b: RunResult) -> tuple[bool, float]:
    """(same tokens, largest logprob difference) of two runs of one prompt."""
    same = [t.token_id for t in a.tokens] == [t.token_id for t in b.tokens]
    pairs = zip(a.tokens, b.tokens, strict=False)
    return same, max((abs(x.logprob - y.logprob) for x, y in pairs), default=0.0)


def cache_experiment(
    lm: LoadedModel, system: str = LONG_SYSTEM, turns=TURNS, tokens: int = 8, rounds: int = 3
) -> dict:
    """Turn 2 of a conversation (system prompt, turn 1 and its answer before it) cold
    and cached; best TTFT of `rounds` each (noise only ever slows a run)."""
    base = SamplingSettings(temperature=0, max_tokens=tokens, seed=0, system_prompt=system)
    first = _run(lm, turns[0], base.with_(prompt_cache=False))
    messages = [
        {"role": "user", "content": turns[0]},
        {"role": "assistant", "content": first.done.text},
        {"role": "user", "content": turns[1]},
    ]
    cold, cached = [], []
    for i in range(rounds):
        for side in ("cold", "cached") if i % 2 == 0 else ("cached", "cold"):
            if side == "cold":
                cold.append(_run(lm, messages, base.with_(prompt_cache=False)))
            else:  # the cache holds turn 1 as a conversation would have left it
                forget(lm)  # (not the cold run's own cache of this very prompt)
                _run(lm, turns[0], base.with_(prompt_cache=False))
                cached.append(_run(lm, messages, base.with_(prompt_cache=True)))
    c0, c1 = min(cold, key=lambda r: r.done.ttft_s), min(cached, key=lambda r: r.done.ttft_s)
    same, diff = _agreement(c0, c1)
    return {
        "prompt_tokens": c1.done.prompt_tokens,
        "cached_tokens": c1.done.cached_tokens,
        "cold_ttft_s": c0.done.ttft_s,
        "cached_ttft_s": c1.done.ttft_s,
        "ratio": c0.done.ttft_s / c1.done.ttft_s,
        "rounds": rounds,
        "cold_ttfts": [r.done.ttft_s for r in cold],
        "cached_ttfts": [r.done.ttft_s for r in cached],
        "same_tokens": same,
        "max_logprob_difference": diff,
        "compute": lm.compute,
    }


FOLLOW_UPS = (
    "Tell me more.",
    "Give one example.",
    "Why does that matter?",
    "Summarise it in one sentence.",
    "What else should I know?",
)


def conversation_experiment(
    lm: LoadedModel,
    first: str,
    turns: int = 4,
    tokens: int = 12,
    system: str | None = None,
    progress=None,
) -> dict:
    """A conversation of `turns` turns (the prompt, then follow-ups), each turn run from
    the cache (as the playground runs it) and then cold. Per turn: prompt tokens, how
    many came from the cache, both TTFTs, the KV cache's bytes, and whether the two
    runs chose the same tokens with the same logprobs."""
    base = SamplingSettings(temperature=0, max_tokens=tokens, seed=0, system_prompt=system)
    messages: list[dict] = []
    rows = []
    _run(lm, "Hello", base.with_(max_tokens=1, system_prompt=None))  # warm-up, not measured
    forget(lm)  # start from nothing, like a new conversation
    for k in range(turns):
        text = first if k == 0 else FOLLOW_UPS[(k - 1) % len(FOLLOW_UPS)]
        if progress:
            progress(f"Turn {k + 1} of {turns}: from the cache, then cold…", k / turns)
        prompt = [*messages, {"role": "user", "content": text}] if messages else text
        cached = _run(lm, prompt, base.with_(prompt_cache=True))
        kept = list(lm.cache_slots)  # the conversation's cache, as the playground keeps it
        cold = _run(lm, prompt, base.with_(prompt_cache=False))
        lm.cache_slots = kept  # the next turn continues from the cached run's cache
        same, diff = _agreement(cold, cached)
        d = cached.done
        rows.append(
            {
                "turn": k + 1,
                "message": text,
                "answer": d.text,
                "prompt_tokens": d.prompt_tokens,
                "cached_tokens": d.cached_tokens,
                "cached_ttft_s": d.ttft_s,
                "cold_ttft_s": cold.done.ttft_s,
                "speedup": cold.done.ttft_s / d.ttft_s,
                "kv_cache_bytes": d.kv_cache_bytes,
                "kv_cache_tokens": d.kv_cache_tokens,
                "context_tokens": d.prompt_tokens + len(cached.tokens),
                "same_tokens": same,
                "max_logprob_difference": diff,
            }
        )
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": d.text}]
    return {"rows": rows, "compute": lm.compute, "context_length": lm.context_length}
