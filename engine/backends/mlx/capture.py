"""The one way to see inside a forward pass: `capture`, for any mlx-lm model.

    with capture(model, attention=True, hidden=True) as seen:
        logits = model(x)

Inside the `with` block, and only there:

- with `attention`, every call of `mx.fast.scaled_dot_product_attention` (every
  mlx-lm architecture's attention goes through it) records its queries and keys
  (after the model's own projections, norms and RoPE), scale and mask in `seen`;
- with `hidden`, every transformer block's output (the residual stream) is
  recorded by wrapping the block classes' `__call__`;
- with `inputs`, every block's input and call arguments (args, kwargs) too.

The patches are process-wide (a class's `__call__`, a module function), so they
last exactly as long as the block and are undone when it ends, by an exception
too: afterwards the block classes' `__call__` and the attention function are the
very objects they were before. inside.py (attention and the logit lens) and
journey.py (the journey of one token) both capture through here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import mlx.core as mx


@dataclass
class Seen:
    """What one captured forward pass recorded, in call order (one entry per layer)."""

    queries: list[mx.array] = field(default_factory=list)  # (1, H, T, D)
    keys: list[mx.array] = field(default_factory=list)  # (1, KV, T, D)
    scales: list[float] = field(default_factory=list)
    masks: list[object] = field(default_factory=list)  # "causal", an array, or None
    hidden: list[mx.array] = field(default_factory=list)  # each block's output (1, T, D)
    inputs: list[mx.array] = field(default_factory=list)  # each block's input (1, T, D)
    calls: list[tuple] = field(default_factory=list)  # each block's (args, kwargs)


def block_classes(model) -> set[type]:
    """The classes of the model's transformer blocks (`model.layers`)."""
    return {type(layer) for layer in model.layers}


@contextlib.contextmanager
def _spy_attention(seen: Seen) -> Iterator[None]:
    original = mx.fast.scaled_dot_product_attention

    def spy(q, k, v, *, scale, mask=None, **kw):
        """Record the attention call's queries, keys, scale and mask, then run it."""
        seen.queries.append(q)
        seen.keys.append(k)
        seen.scales.append(float(scale))
        seen.masks.append(mask)
        return original(q, k, v, scale=scale, mask=mask, **kw)

    mx.fast.scaled_dot_product_attention = spy
    try:
        yield
    finally:
        mx.fast.scaled_dot_product_attention = original


@contextlib.contextmanager
def _spy_blocks(model, seen: Seen, hidden: bool, inputs: bool) -> Iterator[None]:
    originals = {cls: cls.__dict__.get("__call__") for cls in block_classes(model)}

    def wrap(original):
        """A transformer block's `__call__` that also records what it was asked for."""

        def call(self, x, *args, **kw):
            """Run the block and keep its input, arguments and output in `seen`."""
            out = original(self, x, *args, **kw)
            if inputs:
                seen.inputs.append(x)
                seen.calls.append((args, kw))
            if hidden:
                seen.hidden.append(out[0] if isinstance(out, tuple) else out)
            return out

        return call

    patched = []
    try:
        for cls in originals:
            cls.__call__ = wrap(cls.__call__)
            patched.append(cls)
        yield
    finally:
        for cls in patched:
            own = originals[cls]
            if own is None:  # the class inherited its __call__: inherit it again
                del cls.__call__
            else:
                cls.__call__ = own


@contextlib.contextmanager
def capture(model, attention: bool = False, hidden: bool = False, inputs: bool = False):
    """Record what a forward pass of `model` computes inside, for the `with` block only.

    Args:
        model: an mlx-lm model (its blocks in `model.layers`).
        attention: record each attention call's queries, keys, scale and mask.
        hidden: record each transformer block's output.
        inputs: record each transformer block's input and call arguments.

    Yields:
        The `Seen` the pass fills in.
    """
    seen = Seen()
    with contextlib.ExitStack() as stack:
        if attention:
            stack.enter_context(_spy_attention(seen))
        if hidden or inputs:
            stack.enter_context(_spy_blocks(model, seen, hidden, inputs))
        yield seen
