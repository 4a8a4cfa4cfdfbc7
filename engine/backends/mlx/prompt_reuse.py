"""Reusing the KV cache of the previous run: its longest common token prefix with
the new prompt is kept, only the rest is prefilled.

Keyed on token ids, so a change of model (a new LoadedModel), of template or of
anything earlier in the prompt invalidates exactly what changed; a shared system
prompt, or re-running a prompt with other sampling settings, is prefilled once.
The cache remembers the exact tokens it holds (the prompt and every token fed
back during decode), so a trimmed cache is the one a fresh prefill would build.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Reuse:
    """The cache a run starts from and how many prompt tokens it already holds."""

    cache: list
    cached: int  # prompt tokens whose keys and values are reused
    fed: list = field(default_factory=list)  # token arrays fed during decode


def common_prefix(a: list[int], b: list[int]) -> int:
    """The number of leading ids `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def start_cache(lm, ids: list[int], enabled: bool) -> Reuse:
    """The previous run's cache trimmed to its common prefix with `ids` (at least
    the last prompt token is always computed afresh), or a new cache."""
    from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache, trim_prompt_cache

    old, held = getattr(lm, "prompt_cache", None), getattr(lm, "cache_ids", None)
    lm.prompt_cache = lm.cache_ids = None  # in use by this run until it ends cleanly
    if enabled and old is not None and held is not None and can_trim_prompt_cache(old):
        keep = min(common_prefix(held, ids), len(ids) - 1)
        if keep > 0:
            trim_prompt_cache(old, len(held) - keep)
            return Reuse(old, keep)
    return Reuse(make_prompt_cache(lm.model), 0)


def finish(lm, reuse: Reuse, prompt_ids: list[int], prefilled_to: int) -> None:
    """Keep the cache for the next run: the prompt up to `prefilled_to`, then every
    token fed during decode (their keys and values are in the cache)."""
    fed = [int(t) for arr in reuse.fed for t in arr.tolist()]
    lm.prompt_cache = reuse.cache
    lm.cache_ids = list(prompt_ids[:prefilled_to]) + fed
