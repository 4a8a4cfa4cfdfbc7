"""Instrumented generation: one loaded model, one prompt, a stream of records.

Three layers: `prefill` runs the prompt (all but its last token) through the
model in chunks; `decode_steps` yields one sampled step at a time with the time
its value became known; `generate_records` turns those into records. Sampling
and statistics run inside the step (`instrument.py`). This module knows nothing
about processes or the GUI; the caller passes `should_stop`, checked between
prefill chunks and between tokens.

Timing: on a GPU the next step is queued (`mx.async_eval`) before the current
one is read, as mlx-lm does, and each step is stamped when its value is read
back. MLX's CPU build computes a queued step inside `async_eval` itself, so on
the CPU the steps run one after another and each is stamped as it finishes:
pipelining would only stamp every token one step late.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import can_trim_prompt_cache, trim_prompt_cache

from engine.backends.mlx.decode import decode_steps, with_sweeps  # noqa: F401 - re-exported
from engine.backends.mlx.host_stats import greedy_sampler, greedy_stats
from engine.backends.mlx.host_sweep import temperature_sweep_np
from engine.backends.mlx.instrument import StepStats, make_step_sampler, unpack
from engine.backends.mlx.prompt_reuse import Reuse, finish, start_cache
from engine.backends.mlx.run_records import (  # noqa: F401 - kv_cache_* re-exported
    RunRecords,
    kv_cache_bytes,
    kv_cache_tokens,
    stats_from_record,
)
from engine.errors import SettingsError
from engine.models.token_bytes import kept_table
from engine.run.continuation import Continuation
from engine.run.prompt import encode_prompt
from engine.run.records import PrefillRecord, Record
from engine.run.settings import SamplingSettings
from engine.run.thinking import ThinkTracker, find_markers

PREFILL_TARGET_S = 0.5  # aim for a progress record about this often during prefill
MIN_PREFILL_CHUNK = 8


@dataclass
class LoadedModel:
    """A model and tokenizer in memory, with what the records need to know."""

    model: object
    tokenizer: object
    context_length: int
    vocab_size: int
    _bytes: list[bytes] | None = None
    compute: str = ""  # how it runs, for people ("float32: …" or "as stored: …")
    prefill_s_per_token: float | None = None  # learnt from the last prefill: sizes chunks
    _think: object = False  # the thinking markers (None: none), found on first use
    max_kv_size: int | None = None  # a rotating KV cache of this many tokens (load options)
    kv_bits: int | None = None  # a quantized KV cache (8 or 4 bits; load options)
    kv_group: int = 64  # its quantization group along a head

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes of one token (table built once per tokenizer: token_bytes.kept_table)."""
        if self._bytes is None:
            self._bytes = kept_table(self.tokenizer, self.vocab_size)
        return self._bytes[token_id] if 0 <= token_id < len(self._bytes) else b""

    def token_with_bytes(self, raw: bytes) -> int | None:
        """The id of the vocabulary token whose bytes are exactly `raw`, if any."""
        self.token_bytes(0)
        return next((i for i, b in enumerate(self._bytes) if b == raw), None)

    def think_tracker(self, prompt_ids) -> ThinkTracker | None:
        """A tracker of thinking tokens for one run, if the model has thinking markers."""
        if self._think is False:
            self._think = find_markers(self.tokenizer)
        return ThinkTracker(self._think, list(prompt_ids)) if self._think else None


def _never() -> bool:
    return False


def prefill(
    lm: LoadedModel,
    ids: mx.array,
    cache,
    max_chunk: int,
    should_stop,
    t_start: float,
    start: int = 0,
):
    """Run all but the last prompt token through the model, in chunks sized so a
    progress record comes about every PREFILL_TARGET_S.

    Yields:
        (processed, elapsed since t_start) after each chunk; stops early (without
        finishing) when `should_stop()`.
    """
    n_total, done = ids.shape[0], start  # tokens before `start` are in the cache already
    known = lm.prefill_s_per_token  # the last run's speed sizes the first chunk too
    chunk = min(max_chunk, _chunk_for(known) if known else MIN_PREFILL_CHUNK)
    # Only the cache matters here: run the transformer without its vocabulary head
    # (a 576 x 49,152 product per token for SmolLM2), where the model exposes it.
    body = getattr(lm.model, "model", None)
    body = body if callable(body) else lm.model
    while n_total - done > 1:
        if should_stop():
            return
        n = min(chunk, n_total - done - 1)
        t = time.perf_counter()
        body(ids[done : done + n][None], cache=cache)
        mx.eval([c.state for c in cache])
        per_token = (time.perf_counter() - t) / n
        if n >= MIN_PREFILL_CHUNK:  # tiny chunks overstate the cost per token
            lm.prefill_s_per_token = per_token
        done += n
        chunk = min(max_chunk, _chunk_for(per_token))
        yield done, time.perf_counter() - t_start


def _chunk_for(per_token: float) -> int:
    """Prompt tokens per chunk so a progress record comes about every PREFILL_TARGET_S."""
    return int(max(MIN_PREFILL_CHUNK, PREFILL_TARGET_S / max(per_token, 1e-6)))


@dataclass
class _Plan:
    """What one run needs before its clock starts: ids, seed, cache and step function."""

    enc: object
    seed: int
    max_steps: int
    on_device: bool
    cache: list
    prompt_ids: mx.array  # the prompt, then a branch's shared answer prefix
    step: Callable
    reuse: Reuse
    ids: list  # prompt_ids as a list


class PromptTooLong(SettingsError):
    """The prompt does not fit the context window (its size travels with the error)."""

    def __init__(self, message: str, tokens: int, system_tokens: int):
        super().__init__(message)
        self.tokens, self.system_tokens = tokens, system_tokens


def plan_run(lm: LoadedModel, prompt, settings: SamplingSettings, extra=()) -> _Plan:
    """Encode the prompt, seed the sampler and build the step function.

    `extra`: token ids that follow the prompt (a branch's shared answer prefix, and
    its forced token when its step needs no recomputation); the cache is reused
    for them whatever `settings.prompt_cache` says.

    Raises:
        SettingsError: bad settings, an empty prompt, or one that does not fit.
    """
    settings.validate()
    enc = encode_prompt(lm.tokenizer, prompt, settings)
    ids = list(enc.ids) + list(extra)
    n_prompt = len(ids)
    if n_prompt >= lm.context_length:
        over = n_prompt - lm.context_length + 1
        raise PromptTooLong(
            f"the prompt is {n_prompt:,} tokens but the model's context window is "
            f"{lm.context_length:,}: shorten it by {over:,} token{'s' * (over != 1)}",
            n_prompt,
            enc.system_tokens,
        )
    seed = settings.seed if settings.seed is not None else random.randrange(2**31)
    mx.random.seed(seed)
    sample, on_device = step_sampler(settings, lm.vocab_size)
    reuse = start_cache(lm, ids, settings.prompt_cache or bool(extra))
    cache = reuse.cache
    use_history = settings.repetition_penalty != 1.0
    prompt_ids = mx.array(ids)
    history = prompt_ids if use_history else None

    def step(tokens: mx.array, forced: int | None = None):
        """Feed `tokens` (1-D ids) through the model; the next token (`forced`, if
        given) and its statistics."""
        nonlocal history
        reuse.fed.append(tokens)  # its keys and values enter the cache
        logits = lm.model(tokens[None], cache=cache)[:, -1, :]  # (1, V)
        token, packed, raw = sample(logits, history, forced)
        if use_history:
            history = mx.concatenate([history, token])
        return token, (packed, raw)

    def undo() -> None:
        """Take back the last `step`, built (maybe computed) but never read, when the
        run ends before it: its token leaves the cache and the fed list, so the cache
        holds what the run fed and read (a cache that cannot be trimmed keeps it, and
        the fed list says so)."""
        if can_trim_prompt_cache(cache):
            trim_prompt_cache(cache, 1)
            reuse.fed.pop()

    step.n = sample.n
    step.host = getattr(sample, "host", False)
    step.undo = undo
    max_steps = min(settings.max_tokens, lm.context_length - n_prompt)
    return _Plan(enc, seed, max_steps, on_device, cache, prompt_ids, step, reuse, ids)


def generate_records(
    lm: LoadedModel,
    prompt,
    settings: SamplingSettings,
    should_stop: Callable[[], bool] = _never,
    continuation: Continuation | None = None,
) -> Iterator[Record]:
    """Run one generation and yield PrefillRecord..., TokenRecord..., DoneRecord.

    `prompt` is text or a list of chat messages. With a `continuation` the run is a
    branch of an answer (engine/run/continuation.py): the prompt and the answer's first
    K tokens are fed (from the KV cache where it holds them) and the records start
    at step K, with the forced token, if any, as step K. Prefill records count the
    prompt and the shared prefix (their `cached_tokens` may include the forced
    token). Raises SettingsError (from `plan_run`, or a forced text that is not one
    token) before any record is yielded.
    """
    lm.token_bytes(0)  # the vocabulary's byte table, built once, before any clock starts
    t0 = time.perf_counter()
    cont = continuation or Continuation()
    forced = resolve_forced(lm, cont)
    known = stats_from_record(cont.at_step, forced) if forced is not None and cont.at_step else None
    extra = list(cont.prefix) + ([forced] if known is not None else [])
    try:
        plan = plan_run(lm, prompt, settings, extra)
    except PromptTooLong as e:  # the prompt's size first, so the context chart can show it
        yield PrefillRecord(0, e.tokens, time.perf_counter() - t0, e.system_tokens)
        raise
    mx.reset_peak_memory()
    enc, n_fed = plan.enc, len(plan.ids)
    total = len(enc.ids) + cont.step  # prompt and shared prefix (not a forced token)
    run = RunRecords(lm, enc, plan.seed, t0, plan.cache, cont.prefix)
    t_prefill = time.perf_counter()
    n_sys = enc.system_tokens
    yield PrefillRecord(0, total, t_prefill - t0, n_sys)
    done = cached = plan.reuse.cached
    if cached:
        yield PrefillRecord(cached, total, time.perf_counter() - t0, n_sys, cached)
    for done, elapsed in prefill(
        lm, plan.prompt_ids, plan.cache, settings.prefill_chunk, should_stop, t0, cached
    ):
        yield PrefillRecord(min(done, total), total, elapsed, n_sys, cached)
    if n_fed - done > 1:  # prefill stopped early
        finish(lm, plan.reuse, plan.ids, done)
        yield run.done("cancelled", t_prefill, cached, n_fed)
        return
    eos = set(lm.tokenizer.eos_token_ids)
    first = plan.prompt_ids[done:]
    reason = None
    if forced is not None:  # the person's token at step K: reused or computed once
        if known is None:
            y, out = plan.step(first, forced)
            mx.eval(y, out)
            known = _unpacked(plan, out, forced)
        t_known = time.perf_counter()
        yield PrefillRecord(total, total, t_known - t0, n_sys, cached)
        record = run.token(known, t_known, forced in eos, forced=True)
        yield record
        first = mx.array([forced])
        reason = "eos" if record.eos else _stop_reason(run, settings)
    steps = decode_steps(plan.step, first, plan.max_steps, plan.on_device)
    steps = with_sweeps(steps, eos, plan.step.undo)
    for stats, t_known in [] if reason else steps:
        if run.n_timed == 0 and forced is None:
            yield PrefillRecord(total, total, t_known - t0, n_sys, cached)
        record = run.token(stats, t_known, stats.token_id in eos)
        yield record
        if record.eos:
            reason = "eos"
            break
        if reason := _stop_reason(run, settings):
            break
        if should_stop():
            reason = "cancelled"
            break
    steps.close()
    finish(lm, plan.reuse, plan.ids, n_fed - 1)  # decode fed the last prompt token on
    yield run.done(reason or "length", t_prefill, cached, n_fed)
    # A step built but never queued (taken back above) left lazy arrays in the cache:
    # computed now, after the run's last record, not when a later run reuses the cache.
    mx.eval([c.state for c in plan.cache if not c.empty()])


def step_sampler(settings: SamplingSettings, vocab_size: int):
    """The step sampler a run uses on this device, and whether it computes every
    statistic there: on the CPU a greedy step's statistics (host_stats.py) and any
    step's temperature sweep (host_sweep.py) are NumPy's, a fraction of MLX's cost
    over a vocabulary (the sweep alone took 25 ms a token on SmolLM2's 49,152 and
    150 ms on Gemma 3's 262,144). `step_stats` reads what it returns."""
    on_device = mx.default_device().type != mx.DeviceType.cpu
    if not on_device and settings.temperature == 0:  # statistics on the host (host_stats.py)
        return greedy_sampler(settings, vocab_size), on_device
    return make_step_sampler(settings, vocab_size, sweep_on_device=on_device), on_device


def step_stats(sample, on_device: bool, out, token_id: int) -> StepStats:
    """StepStats of one evaluated step: `out` is what `sample` (step_sampler) returned
    after the token, `token_id` the step's token (the sweep on the CPU too)."""
    if getattr(sample, "host", False):
        greedy, raw = out
        return greedy_stats(np.array(raw, copy=False), token_id, int(greedy.item()), sample.n)
    packed, raw = out
    stats = unpack(packed.tolist(), sample.n)
    if not on_device:
        logz, ent = temperature_sweep_np(np.array(raw, copy=False))
        stats = dataclasses.replace(stats, sweep_logz=logz, sweep_entropy=ent)
    return stats


def _unpacked(plan: _Plan, out, token_id: int) -> StepStats:
    """StepStats of one evaluated step's output (the sweep on the CPU too)."""
    return step_stats(plan.step, plan.on_device, out, token_id)


def _stop_reason(run: RunRecords, settings: SamplingSettings) -> str | None:
    """ "stop_string" (the answer cut before it) if a stop string appeared, else None."""
    if hit := _stop_hit(run.text, settings.stop):
        run.text = run.text[: run.text.index(hit)]
        return "stop_string"
    return None


def resolve_forced(lm: LoadedModel, cont: Continuation) -> int | None:
    """The forced token's id: given, or found from its text (one vocabulary token).

    Raises:
        SettingsError: an id outside the vocabulary, or a text that is not exactly
            one token (the message says how it tokenizes).
    """
    if any(not 0 <= i < lm.vocab_size for i in cont.prefix):
        raise SettingsError(
            "this answer's token ids are not this model's (a server's run, or another "
            "model's): continue it on the model that wrote it"
        )
    if cont.forced is not None:
        if not 0 <= cont.forced < lm.vocab_size:
            raise SettingsError(
                f"token id {cont.forced} is not in this model's vocabulary "
                f"(ids 0 to {lm.vocab_size - 1})"
            )
        return cont.forced
    if cont.forced_text is None:
        return None
    exact = lm.token_with_bytes(cont.forced_text.encode("utf-8"))
    if exact is not None:
        return exact
    ids = lm.tokenizer.encode(cont.forced_text, add_special_tokens=False)
    if len(ids) == 1:
        return int(ids[0])
    parts = ", ".join(f"{lm.token_bytes(i).decode('utf-8', 'replace')!r} ({i})" for i in ids)
    raise SettingsError(
        f"{cont.forced_text!r} is not one token of this model's vocabulary: it tokenizes "
        f"as {len(ids)} tokens: {parts}. Continue with one of them"
    )


def _stop_hit(text: str, stops: tuple[str, ...]) -> str | None:
    for s in stops:
        if s in text:
            return s
    return None
