"""Prefill and decode against the hardware, from a run's own records.

Decode reads every weight once per token, plus the KV cache of the context so
far: achieved bandwidth = (weight bytes + KV bytes per token x context) / the
step's time. Prefill does about 2 x parameters FLOPs per prompt token:
achieved FLOP/s = 2 x parameters x prompt tokens / prefill time. Both are set
against the device's limits (measured on a CPU, a published table for GPUs),
which is why decode is memory-bound and prefill compute-bound.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


def versus(got: float, limit: float | None, unit: str, fmt: str = ".0f") -> str:
    """An achieved figure against its limit: "12 of 20 GFLOP/s"; above the limit it says
    so ("15 GFLOP/s, above the 13 GFLOP/s estimate") instead of "15 of 13".

    Args:
        got: the achieved figure.
        limit: the device's limit, or None when unknown.
        unit: the unit both are in.
        fmt: the format of both numbers.
    """
    if not limit:
        return f"{got:{fmt}} {unit}"
    if got > limit:
        return f"{got:{fmt}} {unit}, above the {limit:{fmt}} {unit} estimate"
    return f"{got:{fmt}} of {limit:{fmt}} {unit}"


def prefill_counts(done) -> tuple[int, int, int | None]:
    """What a run fed the model before its first step, the one definition the status
    line, the transcript and Inside's prefill figure share.

    A branch feeds its prompt and the shared answer prefix (`branch_step` tokens); the
    engine's `cached_tokens` counts both (and a forced token it could reuse), so the
    prefix is counted on both sides: "82 of 82 from cache", never "82 of 78".

    Args:
        done: the run's DoneRecord.

    Returns:
        (tokens fed, of them reused from the KV cache, of them computed: the count the
        engine's prefill speed divides; None when it is not known).
    """
    cached = getattr(done, "cached_tokens", 0) or 0
    fed = max((done.prompt_tokens or 0) + (getattr(done, "branch_step", None) or 0), cached)
    if done.prefill_tps and done.prefill_s:  # the engine's own count, read back exactly
        computed = round(done.prefill_tps * done.prefill_s)
    else:
        computed = fed - cached if done.prompt_tokens is not None else None
    return fed, cached, computed


def cache_reuse(done) -> str:
    """'82 of 82 tokens from cache, the prompt and 4 answer tokens' ('' when none)."""
    fed, cached, _ = prefill_counts(done)
    if not cached:
        return ""
    step = getattr(done, "branch_step", None)
    shared = f", the prompt and {step} answer token{'s' * (step != 1)}" if step else ""
    return f"{cached} of {fed} tokens from cache{shared}"


@dataclass
class Timeline:
    """A run's achieved speed against the device's limits, per decode step."""

    prefill_s: float | None = None
    prefill_tokens: int = 0
    prefill_gflops: float | None = None  # achieved
    steps: list[int] = field(default_factory=list)  # decode steps (the first excluded)
    step_s: list[float] = field(default_factory=list)
    step_gbs: list[float] = field(default_factory=list)  # achieved, per step
    step_bytes: list[int] = field(default_factory=list)
    weight_bytes: int | None = None
    kv_bytes_per_token: float | None = None
    parameters: int | None = None
    memory_gbs: float | None = None  # the device's limits
    matmul_gflops: float | None = None
    limits_source: str = ""
    compute: str = ""  # how the weights ran ("float32: measured …"), from the ModelRecord
    missing: list[str] = field(default_factory=list)  # what could not be computed, and why

    @property
    def mean_gbs(self) -> float | None:
        """Bytes read over the decode steps / their time, in GB/s; None without steps."""
        total_s = sum(self.step_s)
        return sum(self.step_bytes) / total_s / 1e9 if total_s > 0 else None


def _tokens_held(done, tokens) -> int:
    """Tokens the KV cache holds; older records lack the count, and there the last
    sampled token (counted in its context) was not yet fed through the model."""
    held = getattr(done, "kv_cache_tokens", None)
    return max(held if held else tokens[-1].context_tokens - 1, 1)


def timeline(model, tokens, done, prompt_tokens: int | None) -> Timeline:
    """The run's timeline from its ModelRecord, TokenRecords and DoneRecord."""
    t = Timeline()
    if model is not None:
        t.weight_bytes, t.parameters = model.weight_bytes, model.parameters
        t.memory_gbs, t.matmul_gflops = model.memory_gbs, model.matmul_gflops
        t.limits_source = getattr(model, "limits_source", "")
        t.compute = getattr(model, "compute", "") or ""
    fed = cached = computed = 0  # prompt tokens (and a branch's shared prefix) fed
    if done is not None:
        if done.prompt_tokens is None and prompt_tokens:  # a server that did not count
            done = dataclasses.replace(done, prompt_tokens=prompt_tokens)
        fed, cached, computed = prefill_counts(done)
    if done is not None and done.prefill_s and computed:
        t.prefill_s, t.prefill_tokens = done.prefill_s, computed
        if t.parameters:
            t.prefill_gflops = 2 * t.parameters * computed / done.prefill_s / 1e9
    elif done is not None and fed and cached >= fed:
        t.missing.append(f"prefill: all {fed:,} tokens came from the KV cache, none computed")
    else:
        t.missing.append("prefill: the run did not report its prefill time")
    if done is not None and done.kv_cache_bytes and tokens:
        t.kv_bytes_per_token = done.kv_cache_bytes / _tokens_held(done, tokens)
    if not t.weight_bytes:
        t.missing.append("decode bandwidth: the backend did not report the weights' size")
        return t
    for rec in tokens[1:]:  # the first token's time is the prefill's
        if rec.latency_s <= 0:
            continue
        kv = (t.kv_bytes_per_token or 0.0) * rec.context_tokens
        read = int(t.weight_bytes + kv)
        t.steps.append(rec.step)
        t.step_s.append(rec.latency_s)
        t.step_bytes.append(read)
        t.step_gbs.append(read / rec.latency_s / 1e9)
    return t
