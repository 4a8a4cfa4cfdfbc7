"""The lab's results, as frozen dataclasses of plain values.

What `logitscope lab … --json` prints and the Lab window draws is `to_dict()` of
these (field names kept from earlier versions; only additions). Rows are tuples
of plain dicts (one per variant, run, batch size or turn), their keys listed in
each class's docstring. `result_from(kind, data)` rebuilds one from JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import ClassVar


@dataclass(frozen=True)
class _Result:
    kind: ClassVar[str] = ""

    def to_dict(self) -> dict:
        """The result as a plain JSON-ready dict (tuples become lists, at every depth).

        Returns:
            One key per field.
        """
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, data: dict):
        """Rebuild a result from its `to_dict()`; unknown keys are ignored.

        Args:
            data: the dict; top-level lists become tuples, rows stay plain dicts.

        Returns:
            The result dataclass.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{k: _frozen(v) for k, v in data.items() if k in names})


@dataclass(frozen=True)
class QuantResult(_Result):
    """variants: name, key, bits, weight_bytes, mean_kl, top1_agreement, perplexity,
    prefill_tps, decode_tps, and per answer token kl, agree, delta_logprob."""

    model: str
    reference: str  # what the reference computes in (e.g. float32 dequantized from 4-bit)
    answer_ids: tuple[int, ...]
    answer: tuple[str, ...]  # the answer's tokens, readable
    labels: dict  # token id (str) -> readable label
    top: dict  # variant key -> per step, the top (token id, probability) pairs
    variants: tuple[dict, ...]
    kind: ClassVar[str] = "quant"


@dataclass(frozen=True)
class SpeculativeResult(_Result):
    """runs (one per k): k, tokens, same_as_target, drafted, accepted, rejected,
    acceptance, target_passes, tokens_per_pass, seconds, speedup, rounds (drafted,
    accepted, correction, draft_probs, target_probs)."""

    target: str
    draft: str
    target_alone_s: float
    target_tokens: tuple[int, ...]
    labels: dict
    runs: tuple[dict, ...]
    text: str = ""  # the target's greedy answer, decoded
    kind: ClassVar[str] = "speculative"


@dataclass(frozen=True)
class BatchResult(_Result):
    """rows: batch_size, seconds, generated_tokens, prompt_tokens, total_tps,
    per_sequence_tps, peak_memory_bytes; ceiling: batch_size, tps."""

    rows: tuple[dict, ...]
    answers: dict  # batch size (str) -> each prompt's answer token ids
    prompts: tuple[str, ...]
    unbatched_equal: dict  # batch size (str) -> same answers as the smallest batch
    ceiling: tuple[dict, ...] = ()
    ceiling_source: str = ""
    kind: ClassVar[str] = "batch"


@dataclass(frozen=True)
class CacheResult(_Result):
    """rows (one per turn): turn, message, answer, prompt_tokens, cached_tokens,
    cached_ttft_s, cold_ttft_s, speedup, kv_cache_bytes, kv_cache_tokens,
    context_tokens, same_tokens, max_logprob_difference. With rounds, turn 2 behind
    a long system prompt: prompt_tokens … max_logprob_difference at the top level.
    With kv_bits, kv_precision: one row per KV precision (float first): kv_bits,
    kv_cache_bytes, bytes_per_token, ttft_s, decode_tps, same_tokens, kl (per step,
    nats, against float), mean_kl, max_kl."""

    rows: tuple[dict, ...]
    compute: str
    context_length: int
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    cold_ttft_s: float | None = None
    cached_ttft_s: float | None = None
    ratio: float | None = None
    rounds: int = 0
    cold_ttfts: tuple[float, ...] = ()
    cached_ttfts: tuple[float, ...] = ()
    same_tokens: bool | None = None
    max_logprob_difference: float | None = None
    kv_precision: tuple[dict, ...] = ()  # float vs quantized KV: see lab_kv.py
    kind: ClassVar[str] = "cache"

    def to_dict(self) -> dict:
        """The result as a plain JSON-ready dict, `rows` also under `conversation`.

        Returns:
            One key per field, plus `conversation` (the name `lab cache --json` gave
            the turns).
        """
        out = super().to_dict()
        out["conversation"] = out["rows"]  # the name `lab cache --json` gave the turns
        return out


LabResult = QuantResult | SpeculativeResult | BatchResult | CacheResult
RESULTS = {r.kind: r for r in (QuantResult, SpeculativeResult, BatchResult, CacheResult)}


def result_from(kind: str, data: dict) -> LabResult:
    """Rebuild an experiment's result from its `to_dict()` (e.g. a LabRecord's data).

    Args:
        kind: quant | speculative | batch | cache.
        data: the result's dict.

    Returns:
        The result dataclass.

    Raises:
        KeyError: an unknown `kind`.
    """
    return RESULTS[kind].from_dict(data)


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _frozen(value):
    """Lists (from JSON) as tuples at the top level; rows stay plain dicts."""
    return tuple(value) if isinstance(value, list) else value
