"""How a model is loaded, chosen per model and remembered: the context length (a capped
or rotating KV cache, as mlx-lm's `max_kv_size`) and the KV cache's precision (float,
or mlx-lm's quantized KV cache at 8 or 4 bits), plus the KV bytes each choice costs.

Plain values only: the window and the command line write the choice into the data
folder's `model_prefs.json` (engine/models/model_prefs.py), and the engine process
reads it when it loads the model. Nothing here imports MLX or Qt.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from engine.errors import SettingsError

KV_BITS = (None, 8, 4)  # None: the model's own float type
KV_GROUP_SIZE = 64  # mlx-lm's default kv_group_size
CONTEXT_MODES = ("capped", "rotating")
MIN_CONTEXT = 64
FLOAT_BYTES = 2  # keys and values in float16/bfloat16 unless the model runs in float32


@dataclass(frozen=True)
class LoadOptions:
    """The load settings of one model.

    Attributes:
        context_length: tokens the KV cache holds; None keeps the model's own length.
        kv_bits: 8 or 4 for a quantized KV cache; None keeps keys and values in float.
        context_mode: "capped" (a run stops at the length) or "rotating" (the oldest
            tokens but the first 4 are dropped, as mlx-lm's RotatingKVCache).
    """

    context_length: int | None = None
    kv_bits: int | None = None
    context_mode: str = "capped"

    def __post_init__(self):
        ctx = self.context_length
        if ctx is not None and (isinstance(ctx, bool) or not isinstance(ctx, int)):
            raise SettingsError(f"context length must be a whole number, not {ctx!r}")
        if ctx is not None and ctx < MIN_CONTEXT:
            raise SettingsError(f"context length must be at least {MIN_CONTEXT} tokens")
        if self.kv_bits not in KV_BITS:
            raise SettingsError(f"KV precision must be float, 8 or 4 bits, not {self.kv_bits}")
        if self.context_mode not in CONTEXT_MODES:
            raise SettingsError(f"context mode must be capped or rotating, not {self.context_mode}")
        if self.context_mode == "rotating" and self.kv_bits is not None:
            raise SettingsError(
                "a rotating KV cache cannot be quantized (mlx-lm has no quantized rotating "
                "cache): choose a capped context or a float KV cache"
            )
        if self.context_mode == "rotating" and ctx is None:
            raise SettingsError("a rotating KV cache needs a context length")

    def to_dict(self) -> dict:
        """Plain values for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> LoadOptions:
        """Validated field by field; unknown keys are ignored.

        Raises:
            SettingsError: a field is out of range.
        """
        if not isinstance(data, dict):
            raise SettingsError("load options must be a JSON object")
        return cls(
            context_length=data.get("context_length"),
            kv_bits=data.get("kv_bits"),
            context_mode=data.get("context_mode", "capped"),
        )

    def label(self) -> str:
        """In words, e.g. "context 4,096 (capped) · KV 8-bit"."""
        ctx = (
            f"context {self.context_length:,} ({self.context_mode})"
            if self.context_length
            else ("model's context")
        )
        kv = f"KV {self.kv_bits}-bit" if self.kv_bits else "KV float"
        return f"{ctx} · {kv}"


def effective_context(options: LoadOptions, model_context: int) -> int:
    """The context length a run may fill: the chosen one (never above the model's)
    when capped, the model's own when the cache rotates."""
    if options.context_length is None or options.context_mode == "rotating":
        return model_context
    return min(options.context_length, model_context)


def cache_tokens(options: LoadOptions, model_context: int) -> int:
    """The most tokens the KV cache holds at once (the memory it can take)."""
    if options.context_length is None:
        return model_context
    return min(options.context_length, model_context)


def kv_group_size(head_dim: int) -> int:
    """The quantization group along a head (mlx-lm's 64, or 32 for a head of 32·k)."""
    return KV_GROUP_SIZE if head_dim % KV_GROUP_SIZE == 0 else 32


def kv_bytes_per_token(
    layers: int, kv_heads: int, head_dim: int, bits: int | None, float_bytes: int = FLOAT_BYTES
) -> int:
    """Bytes one token's keys and values take in the cache.

    layers × 2 (keys, values) × kv_heads × (head_dim × element bytes); a quantized
    element is `bits`/8 bytes packed in uint32 words, plus one scale and one bias in the
    float type per group of the head.

    Args:
        layers: attention layers holding a KV cache.
        kv_heads: key/value heads per layer.
        head_dim: the size of one head.
        bits: 8 or 4 for a quantized cache, None for float.
        float_bytes: bytes of the float type (2 for float16/bfloat16, 4 for float32).

    Returns:
        The exact bytes per token.
    """
    if bits is None:
        per_head = head_dim * float_bytes
    else:
        words = math.ceil(head_dim * bits / 32)
        per_head = words * 4 + 2 * (head_dim // kv_group_size(head_dim)) * float_bytes
    return layers * 2 * kv_heads * per_head
