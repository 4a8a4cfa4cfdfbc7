"""Reusing the KV cache of the previous run: its longest common token prefix with
the new prompt is kept, only the rest is prefilled.

The last few runs' caches are kept (MAX_SLOTS), so a branch of an earlier answer
finds its parent's keys and values even after other runs. Keyed on token ids, so
a change of model (a new LoadedModel), of template or of anything earlier in the
prompt invalidates exactly what changed; a shared system prompt, or re-running a
prompt with other sampling settings, is prefilled once.
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


MAX_SLOTS = 4  # caches kept: the last runs' (a branch finds its parent's)
MAX_SLOT_BYTES = 1 << 30  # and at most this much memory between them


def forget(lm) -> None:
    """Drop every kept cache (the next run starts from nothing)."""
    lm.cache_slots = []


def start_cache(lm, ids: list[int], enabled: bool) -> Reuse:
    """The kept cache sharing the longest prefix with `ids`, trimmed to it (at least
    the last prompt token is always computed afresh), or a new cache. The cache
    taken is out of the kept ones until `finish` puts it back."""
    from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache, trim_prompt_cache

    slots = getattr(lm, "cache_slots", None) or []
    lm.cache_slots = slots
    best, keep = None, 0
    for i, (held, cache) in enumerate(slots):
        n = min(common_prefix(held, ids), len(ids) - 1)
        if enabled and n > keep and can_trim_prompt_cache(cache):
            best, keep = i, n
    if best is not None:
        held, cache = slots.pop(best)
        trim_prompt_cache(cache, len(held) - keep)
        return Reuse(cache, keep)
    return Reuse(new_cache(lm, make_prompt_cache), 0)


def new_cache(lm, make_prompt_cache) -> list:
    """An empty KV cache as the load options ask: rotating at `lm.max_kv_size`
    tokens (keeping the first 4, as mlx-lm's max_kv_size), quantized at `lm.kv_bits`,
    else mlx-lm's own. Only plain KVCache layers are replaced: a model's own kinds
    (sliding windows, state caches) stay as the model made them."""
    from mlx_lm.models.cache import KVCache, QuantizedKVCache, RotatingKVCache

    bits, size = getattr(lm, "kv_bits", None), getattr(lm, "max_kv_size", None)
    cache = make_prompt_cache(lm.model)
    if size is not None:  # make_prompt_cache ignores max_kv_size for models with make_cache
        return [RotatingKVCache(max_size=size, keep=4) if type(c) is KVCache else c for c in cache]
    if bits is not None:
        group = getattr(lm, "kv_group", 64)
        return [QuantizedKVCache(group, bits) if type(c) is KVCache else c for c in cache]
    return cache


def finish(lm, reuse: Reuse, prompt_ids: list[int], prefilled_to: int) -> None:
    """Keep the cache for the next runs: the prompt up to `prefilled_to`, then every
    token fed during decode (their keys and values are in the cache). Kept caches
    whose tokens this one holds too are dropped, then the oldest beyond MAX_SLOTS
    or MAX_SLOT_BYTES."""
    from engine.backends.mlx.run_records import kv_cache_bytes

    fed = [int(t) for arr in reuse.fed for t in arr.tolist()]
    ids = list(prompt_ids[:prefilled_to]) + fed
    slots = [(h, c) for h, c in getattr(lm, "cache_slots", None) or [] if h != ids[: len(h)]]
    slots.insert(0, (ids, reuse.cache))
    total, kept = 0, []
    for held, cache in slots[:MAX_SLOTS]:
        total += kv_cache_bytes(cache)
        if kept and total > MAX_SLOT_BYTES:
            break
        kept.append((held, cache))
    lm.cache_slots = kept
