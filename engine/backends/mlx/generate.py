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
import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import mlx.core as mx
import numpy as np

from engine.backends.mlx.instrument import (
    StepStats,
    candidates,
    make_step_sampler,
    temperature_sweep_np,
    unpack,
)
from engine.backends.mlx.prompt_reuse import Reuse, finish, start_cache
from engine.errors import SettingsError
from engine.models.token_bytes import TextStream, bytes_table, vocabulary_strings
from engine.prompt import encode_prompt
from engine.records import DoneRecord, PrefillRecord, Record, TokenRecord
from engine.series import decode_tps
from engine.settings import SamplingSettings
from engine.thinking import ThinkTracker, find_markers

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

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes of one token (table built once: vocabularies are fixed)."""
        if self._bytes is None:
            self._bytes = bytes_table(vocabulary_strings(self.tokenizer, self.vocab_size))
        return self._bytes[token_id] if 0 <= token_id < len(self._bytes) else b""

    def think_tracker(self, prompt_ids) -> ThinkTracker | None:
        """A tracker of thinking tokens for one run, if the model has thinking markers."""
        if self._think is False:
            self._think = find_markers(self.tokenizer)
        return ThinkTracker(self._think, list(prompt_ids)) if self._think else None


def kv_cache_bytes(cache) -> int:
    """Bytes of the KV cache actually holding tokens (not the preallocated tail)."""
    total = 0
    for c in cache:
        keys = getattr(c, "keys", None)
        if keys is None or not hasattr(keys, "shape"):
            continue
        used = min(getattr(c, "offset", keys.shape[2]), keys.shape[2])
        total += (keys.nbytes + c.values.nbytes) * used // keys.shape[2]
    return total


def kv_cache_tokens(cache) -> int:
    """Tokens fed through the model so far: the last sampled token is only fed on when
    the next step ran (pipelined decode runs it early), so it is read, not inferred."""
    return max((int(getattr(c, "offset", 0)) for c in cache), default=0)


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


def decode_steps(step, first_input: mx.array, max_steps: int, pipelined: bool, sweep_np: bool):
    """Run up to `max_steps` sampling steps; the caller stops early by closing.

    Yields:
        (StepStats, perf_counter time at which the step's values were known).
    """
    y, out = step(first_input)
    if pipelined:
        mx.async_eval(y, out)
    for i in range(max_steps):
        if not pipelined:
            mx.eval(y, out)
        elif i + 1 < max_steps:
            next_y, next_out = step(y)
            mx.async_eval(next_y, next_out)
        packed, raw = out
        stats = unpack(packed.tolist(), step.n)
        if sweep_np:
            logz, ent = temperature_sweep_np(np.array(raw, copy=False))
            stats = dataclasses.replace(stats, sweep_logz=logz, sweep_entropy=ent)
        yield stats, time.perf_counter()
        if i + 1 >= max_steps:
            return
        if pipelined:
            y, out = next_y, next_out
        else:
            y, out = step(y)


@dataclass
class _Plan:
    """What one run needs before its clock starts: ids, seed, cache and step function."""

    enc: object
    seed: int
    max_steps: int
    on_device: bool
    cache: list
    prompt_ids: mx.array
    step: Callable
    reuse: Reuse


class PromptTooLong(SettingsError):
    """The prompt does not fit the context window (its size travels with the error)."""

    def __init__(self, message: str, tokens: int, system_tokens: int):
        super().__init__(message)
        self.tokens, self.system_tokens = tokens, system_tokens


def plan_run(lm: LoadedModel, prompt, settings: SamplingSettings) -> _Plan:
    """Encode the prompt, seed the sampler and build the step function.

    Raises:
        SettingsError: bad settings, an empty prompt, or one that does not fit.
    """
    settings.validate()
    enc = encode_prompt(lm.tokenizer, prompt, settings)
    n_prompt = len(enc.ids)
    if n_prompt >= lm.context_length:
        raise PromptTooLong(
            f"the prompt is {n_prompt:,} tokens but the model's context window is "
            f"{lm.context_length:,}: shorten it by {n_prompt - lm.context_length + 1:,} tokens",
            n_prompt,
            enc.system_tokens,
        )
    seed = settings.seed if settings.seed is not None else random.randrange(2**31)
    mx.random.seed(seed)
    on_device = mx.default_device().type != mx.DeviceType.cpu
    sample = make_step_sampler(settings, lm.vocab_size, sweep_on_device=on_device)
    reuse = start_cache(lm, list(enc.ids), settings.prompt_cache)
    cache = reuse.cache
    use_history = settings.repetition_penalty != 1.0
    prompt_ids = mx.array(enc.ids)
    history = prompt_ids if use_history else None

    def step(tokens: mx.array):
        """Feed `tokens` (1-D ids) through the model; the next token and its statistics."""
        nonlocal history
        reuse.fed.append(tokens)  # its keys and values enter the cache
        logits = lm.model(tokens[None], cache=cache)[:, -1, :]  # (1, V)
        token, packed, raw = sample(logits, history)
        if use_history:
            history = mx.concatenate([history, token])
        return token, (packed, raw)

    step.n = sample.n
    max_steps = min(settings.max_tokens, lm.context_length - n_prompt)
    return _Plan(enc, seed, max_steps, on_device, cache, prompt_ids, step, reuse)


def generate_records(
    lm: LoadedModel,
    prompt,
    settings: SamplingSettings,
    should_stop: Callable[[], bool] = _never,
) -> Iterator[Record]:
    """Run one generation and yield PrefillRecord..., TokenRecord..., DoneRecord.

    `prompt` is text or a list of chat messages. Raises SettingsError (from
    `plan_run`) before any record is yielded.
    """
    lm.token_bytes(0)  # the vocabulary's byte table, built once, before any clock starts
    t0 = time.perf_counter()
    try:
        plan = plan_run(lm, prompt, settings)
    except PromptTooLong as e:  # the prompt's size first, so the context chart can show it
        yield PrefillRecord(0, e.tokens, time.perf_counter() - t0, e.system_tokens)
        raise
    mx.reset_peak_memory()
    enc, n_prompt = plan.enc, len(plan.enc.ids)
    run = _Run(lm, enc, plan.seed, t0, plan.cache)
    t_prefill = time.perf_counter()
    n_sys = enc.system_tokens
    yield PrefillRecord(0, n_prompt, t_prefill - t0, n_sys)
    done = cached = plan.reuse.cached
    if cached:
        yield PrefillRecord(cached, n_prompt, time.perf_counter() - t0, n_sys, cached)
    for done, elapsed in prefill(
        lm, plan.prompt_ids, plan.cache, settings.prefill_chunk, should_stop, t0, cached
    ):
        yield PrefillRecord(done, n_prompt, elapsed, n_sys, cached)
    if n_prompt - done > 1:  # prefill stopped early
        finish(lm, plan.reuse, enc.ids, done)
        yield run.done("cancelled", t_prefill)
        return
    eos = set(lm.tokenizer.eos_token_ids)
    steps = decode_steps(
        plan.step, plan.prompt_ids[done:], plan.max_steps, plan.on_device, not plan.on_device
    )
    reason = "length"
    for stats, t_known in steps:
        if run.n_steps == 0:
            yield PrefillRecord(n_prompt, n_prompt, t_known - t0, n_sys, cached)
        record = run.token(stats, t_known, stats.token_id in eos)
        yield record
        if record.eos:
            reason = "eos"
            break
        if hit := _stop_hit(run.text, settings.stop):
            run.text, reason = run.text[: run.text.index(hit)], "stop_string"
            break
        if should_stop():
            reason = "cancelled"
            break
    steps.close()
    finish(lm, plan.reuse, enc.ids, n_prompt - 1)  # decode fed the last prompt token on
    yield run.done(reason, t_prefill, cached)


class _Run:
    """The records of one run: token text from bytes, timings from step stamps."""

    def __init__(self, lm: LoadedModel, enc, seed: int, t0: float, cache):
        self.lm, self.enc, self.seed, self.t0, self.cache = lm, enc, seed, t0, cache
        self.stream = TextStream()
        self.text = ""
        self.n_steps = self.n_text = 0
        self.t_first = self.t_last = None
        self.think = lm.think_tracker(enc.ids)

    def token(self, stats: StepStats, t_known: float, is_eos: bool) -> TokenRecord:
        """The TokenRecord of one decoded step; `t_known` is when its value was known."""
        raw = self.lm.token_bytes(stats.token_id)
        piece = "" if is_eos else self.stream.add(raw)
        self.text += piece
        latency = t_known - (self.t_last if self.t_last is not None else self.t0)
        if self.t_first is None:
            self.t_first = t_known
        self.t_last = t_known
        step = self.n_steps
        self.n_steps += 1
        self.n_text += 0 if is_eos else 1
        thinking = self.think.add(stats.token_id) if self.think and not is_eos else False
        return _token_record(
            self.lm,
            stats,
            step,
            piece,
            raw,
            t_known - self.t0,
            latency,
            len(self.enc.ids),
            is_eos,
            thinking,
        )

    def done(self, reason: str, t_prefill: float, cached: int = 0) -> DoneRecord:
        """The run's DoneRecord; `cached` prompt tokens are left out of the prefill speed."""
        if reason not in ("stop_string",):
            self.text += self.stream.flush()
        n_prompt = len(self.enc.ids)
        prefill_s = (self.t_first - t_prefill) if self.t_first is not None else None
        decode_s = (self.t_last - self.t_first) if self.n_steps >= 2 else None
        return DoneRecord(
            finish_reason=reason,
            text=self.text,
            prompt_tokens=n_prompt,
            generated_tokens=self.n_text,
            ttft_s=(self.t_first - self.t0) if self.t_first is not None else None,
            prefill_tps=(n_prompt - cached) / prefill_s if prefill_s else None,
            decode_tps=decode_tps(self.n_steps, self.t_first, self.t_last),
            peak_memory_bytes=int(mx.get_peak_memory()),
            kv_cache_bytes=kv_cache_bytes(self.cache),
            kv_cache_tokens=kv_cache_tokens(self.cache),
            context_length=self.lm.context_length,
            seed=self.seed,
            elapsed_s=time.perf_counter() - self.t0,
            system_tokens=self.enc.system_tokens,
            prefill_s=prefill_s,
            decode_s=decode_s,
            cached_tokens=cached,
            thinking_tokens=self.think.count if self.think else 0,
        )


def _stop_hit(text: str, stops: tuple[str, ...]) -> str | None:
    for s in stops:
        if s in text:
            return s
    return None


def _token_record(lm, stats, step, piece, raw, elapsed, latency, n_prompt, is_eos, thinking):
    bytes_of = lm.token_bytes
    return TokenRecord(
        step=step,
        token_id=stats.token_id,
        text=piece,
        logprob=stats.logprob,
        prob=math.exp(stats.logprob),
        sampled_logprob=stats.sampled_logprob,
        top=candidates(stats.top_ids, stats.top_logprobs, bytes_of),
        sampled_top=candidates(stats.sampled_top_ids, stats.sampled_top_logprobs, bytes_of),
        entropy=max(stats.entropy, 0.0),
        sampled_entropy=max(stats.sampled_entropy, 0.0),
        elapsed_s=elapsed,
        latency_s=latency,
        context_tokens=n_prompt + step + 1,
        sweep_logz=tuple(stats.sweep_logz),
        sweep_entropy=tuple(max(h, 0.0) for h in stats.sweep_entropy),
        bytes=tuple(raw),
        eos=is_eos,
        sampled_probs=tuple(min(max(p, 0.0), 1.0) for p in stats.sampled_probs),
        thinking=thinking,
    )
