"""The lab's experiments, as frozen parameter dataclasses of plain values.

Each is validated once, here, when it is made (a SettingsError says what is out
of range), and crosses the process pipe as itself (engine/operations.Lab). The
command line and the Lab window build the same dataclasses and take every default
from here (the dataclasses' own, and the few named below where one of them starts
elsewhere); engine/backends/mlx/lab_runs.run_experiment runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.errors import SettingsError
from engine.settings import BIT_WIDTHS

MAX_ANSWER = 512  # answer tokens any experiment generates or teacher-forces


def _whole(value, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SettingsError(f"{what} must be a whole number from {low} to {high}, not {value!r}")
    return value


def _wholes(values, low: int, high: int, what: str) -> tuple[int, ...]:
    values = tuple(values)
    if not values:
        raise SettingsError(f"{what}: give at least one value")
    return tuple(_whole(v, low, high, what) for v in values)


def _bits(values, what: str) -> tuple[int, ...]:
    values = _wholes(values, 1, 16, what)
    bad = [b for b in values if b not in BIT_WIDTHS]
    if bad:
        raise SettingsError(f"MLX quantizes to 2, 3, 4, 5, 6 or 8 bits, not {bad}")
    return values


@dataclass(frozen=True)
class QuantParams:
    """Quantization A/B: re-quantized variants teacher-forced on the reference's answer.

    Attributes:
        bits: the widths to re-quantize to (each one of BIT_WIDTHS).
        tokens: the reference answer's length in tokens (1..MAX_ANSWER).
    """

    bits: tuple[int, ...] = (8, 6, 4, 3)
    tokens: int = 24
    kind: ClassVar[str] = "quant"

    def __post_init__(self):
        object.__setattr__(self, "bits", _bits(self.bits, "bits"))
        _whole(self.tokens, 1, MAX_ANSWER, "the answer length (tokens)")


@dataclass(frozen=True)
class SpeculativeParams:
    """Greedy speculative decoding: a draft proposes k tokens, the target verifies.

    Attributes:
        ks: the k values to run (tokens drafted per pass, 1..16 each).
        draft_bits: the re-quantized draft's width (one of BIT_WIDTHS).
        tokens: the answer's length in tokens (1..1024).
        draft: another model's spec as the draft; None: the target re-quantized.
    """

    ks: tuple[int, ...] = (1, 2, 4)
    draft_bits: int = 3
    tokens: int = 32
    draft: str | None = None  # another model as the draft (default: the target re-quantized)
    kind: ClassVar[str] = "speculative"

    def __post_init__(self):
        object.__setattr__(self, "ks", _wholes(self.ks, 1, 16, "k (tokens drafted per pass)"))
        _bits((self.draft_bits,), "the draft's bits")
        _whole(self.tokens, 1, 1024, "the answer length (tokens)")


@dataclass(frozen=True)
class BatchParams:
    """The built-in prompt set answered at each batch size.

    Attributes:
        sizes: the batch sizes (1..64 each).
        tokens: tokens generated per prompt (1..MAX_ANSWER).
    """

    sizes: tuple[int, ...] = (1, 2, 4, 8)
    tokens: int = 16
    kind: ClassVar[str] = "batch"

    def __post_init__(self):
        object.__setattr__(self, "sizes", _wholes(self.sizes, 1, 64, "batch sizes"))
        _whole(self.tokens, 1, MAX_ANSWER, "the answer length (tokens)")


@dataclass(frozen=True)
class CacheParams:
    """The prompt cache: a conversation grown `turns` turns, each run cached, then cold.

    With `rounds` > 0 it also runs turn 2 behind a long system prompt, cold and
    cached, alternated over `rounds` rounds.

    Attributes:
        turns: conversation turns (0..12).
        tokens: answer tokens per turn (1..256).
        rounds: cold/cached rounds behind the long system prompt (0..20).
        first: the conversation's first message.
        kv_bits: quantized KV caches (8, 4) to compare with the float one on the first
            message: bytes, speed and per-token KL (engine/backends/mlx/lab_kv.py).
    """

    turns: int = 4
    tokens: int = 12
    rounds: int = 0
    first: str = "Why do ships float?"  # the conversation's first message
    kv_bits: tuple[int, ...] = ()
    kind: ClassVar[str] = "cache"

    def __post_init__(self):
        _whole(self.turns, 0, 12, "turns")
        _whole(self.tokens, 1, 256, "the answer length (tokens)")
        _whole(self.rounds, 0, 20, "rounds")
        object.__setattr__(self, "kv_bits", tuple(self.kv_bits or ()))
        if any(b not in (4, 8) for b in self.kv_bits):
            raise SettingsError(f"KV cache bits must be 8 or 4, not {list(self.kv_bits)}")
        if not self.turns and not self.rounds and not self.kv_bits:
            raise SettingsError(
                "give turns (a conversation), rounds (turn 2 cold vs cached) or kv_bits"
            )
        if not isinstance(self.first, str) or not self.first.strip():
            raise SettingsError("the conversation's first message is empty")


LabParams = QuantParams | SpeculativeParams | BatchParams | CacheParams
KINDS = {p.kind: p for p in (QuantParams, SpeculativeParams, BatchParams, CacheParams)}


# Where a default differs between the command line and the Lab window, both start here.
WINDOW_QUANT_BITS = (8, 4, 3)  # the Lab window's bit boxes checked at first
WINDOW_KV_BITS = (8, 4)  # the Lab window's "Compare KV precision" (`lab cache --kv-bits`)
COMMAND_SPECULATIVE = SpeculativeParams(ks=(4,))  # `lab speculative` runs one k
# `lab cache`: turn 2 behind a long system prompt, cold vs cached, no conversation
COMMAND_CACHE = CacheParams(turns=0, tokens=8, rounds=3)


def params_from(kind: str, values: dict | None = None) -> LabParams:
    """The experiment `kind` with `values` (unknown names are refused, not ignored).

    Args:
        kind: a key of KINDS (quant | speculative | batch | cache).
        values: field names to values (a `kind` key is ignored); None or missing
            fields: the defaults.

    Returns:
        The validated parameter dataclass.

    Raises:
        SettingsError: an unknown experiment, an unknown parameter, a value out of range.
    """
    if kind not in KINDS:
        raise SettingsError(f"unknown experiment '{kind}' ({', '.join(KINDS)})")
    cls = KINDS[kind]
    values = {k: v for k, v in (values or {}).items() if k != "kind"}
    names = {f for f in cls.__dataclass_fields__ if f != "kind"}
    unknown = sorted(set(values) - names)
    if unknown:
        raise SettingsError(f"the {kind} experiment has no parameter {', '.join(unknown)}")
    return cls(**values)


__all__ = [
    "COMMAND_CACHE",
    "COMMAND_SPECULATIVE",
    "KINDS",
    "WINDOW_KV_BITS",
    "WINDOW_QUANT_BITS",
    "LabParams",
    "params_from",
]
