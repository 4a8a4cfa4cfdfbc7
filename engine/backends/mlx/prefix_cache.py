"""A prompt prefix's KV cache, prefilled once and copied for each prompt that starts with
it, so that only the rest of each prompt is prefilled.

A question set's prompts (engine/backends/mlx/calibrate.py) share their system prompt and
worked examples: about 60 of SmolLM2's 76 prompt tokens, prefilled again for every
question and again for every journaled answer and sample of it. Keys and values depend
only on the tokens before them, so a copy of the prefix's cache followed by the rest is
the cache a whole prefill builds (up to float rounding: the attention is split otherwise).

The kept arrays are never handed out: each copy gets arrays of its own (an MLX slice
assignment into a cache's keys changes the array object it is made on).
"""

from __future__ import annotations

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map


class PrefixCache:
    """The KV cache of one token prefix (`ids`), for copies."""

    def __init__(self, model):
        self.model = model
        self.ids: tuple[int, ...] = ()
        self._states: list | None = None  # per layer: (state, meta_state)

    def fill(self, ids: list[int]) -> None:
        """Prefill `ids` (replacing the prefix kept before; none kept when empty)."""
        from mlx_lm.models.cache import make_prompt_cache

        self.ids, self._states = tuple(ids), None
        if not ids:
            return
        cache = make_prompt_cache(self.model)
        self.model(mx.array([list(ids)]), cache=cache)
        states = [(c.state, getattr(c, "meta_state", None)) for c in cache]
        mx.eval([leaf for _k, leaf in tree_flatten(states) if isinstance(leaf, mx.array)])
        self._states = states

    def cache_for(self, ids: list[int]) -> tuple[list, int]:
        """A new cache for `ids`: holding the kept prefix when `ids` starts with it and
        goes on past it, else empty; and how many of `ids` it holds."""
        from mlx_lm.models.cache import make_prompt_cache

        cache = make_prompt_cache(self.model)
        n = len(self.ids)
        if self._states is None or n >= len(ids) or tuple(ids[:n]) != self.ids:
            return cache, 0
        for c, (state, meta) in zip(cache, self._states, strict=True):
            c.state = tree_map(_own, state)  # arrays of its own (see the module)
            if meta is not None:  # mlx-lm before 0.30 kept offsets and sizes here
                c.meta_state = meta
        return cache, n


def _own(leaf):
    """A copy of an array (anything else as it is)."""
    return mx.array(leaf) if isinstance(leaf, mx.array) else leaf


def shared_prefix(ids_of, a: str = "1", b: str = "x") -> list[int]:
    """The token ids every prompt `ids_of(text)` starts with, whatever the text: the
    common prefix of two prompts whose texts share nothing."""
    from engine.backends.mlx.prompt_reuse import common_prefix

    first, second = ids_of(a), ids_of(b)
    return first[: common_prefix(first, second)]
