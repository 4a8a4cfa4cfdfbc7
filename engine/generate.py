"""Instrumented generation: one loaded model, one prompt, a stream of records.

The loop mirrors mlx-lm's `generate_step`: the next step is queued on the device
(`mx.async_eval`) before the current one is read back, so Python bookkeeping
overlaps model compute. Sampling and statistics run inside the step (see
`instrument.py`). This module knows nothing about processes or the GUI; the
caller passes `should_stop`, checked between prefill chunks and between tokens.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from engine.errors import SettingsError
from engine.instrument import (
    candidates,
    make_step_sampler,
    temperature_sweep_np,
    unpack,
)
from engine.prompt import encode_prompt
from engine.records import DoneRecord, PrefillRecord, Record, TokenRecord
from engine.settings import SamplingSettings


@dataclass
class LoadedModel:
    """A model and tokenizer in memory, with what the records need to know."""

    model: object
    tokenizer: object
    context_length: int
    vocab_size: int
    _texts: dict | None = None

    def token_text(self, token_id: int) -> str:
        """The text of one token on its own (memoised: vocabularies are fixed)."""
        if self._texts is None:
            self._texts = {}
        text = self._texts.get(token_id)
        if text is None:
            text = self.tokenizer.decode([token_id])
            self._texts[token_id] = text
        return text


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


def _never() -> bool:
    return False


def generate_records(
    lm: LoadedModel,
    prompt: str,
    settings: SamplingSettings,
    should_stop: Callable[[], bool] = _never,
) -> Iterator[Record]:
    """Run one generation and yield PrefillRecord, TokenRecord..., DoneRecord.

    Raises:
        SettingsError: bad settings, an empty prompt, or a prompt that does not
            fit the context window (raised before any record is yielded).
    """
    t0 = time.perf_counter()
    settings.validate()
    enc = encode_prompt(lm.tokenizer, prompt, settings)
    n_prompt = len(enc.ids)
    if n_prompt >= lm.context_length:
        raise SettingsError(
            f"the prompt is {n_prompt} tokens but the model's context window is "
            f"{lm.context_length}: shorten the prompt"
        )
    seed = settings.seed if settings.seed is not None else random.randrange(2**31)
    mx.random.seed(seed)
    mx.reset_peak_memory()
    max_tokens = min(settings.max_tokens, lm.context_length - n_prompt)
    on_device = mx.default_device().type != mx.DeviceType.cpu
    sample = make_step_sampler(settings, lm.vocab_size, sweep_on_device=on_device)
    cache = make_prompt_cache(lm.model)
    use_history = settings.repetition_penalty != 1.0
    prompt_ids = mx.array(enc.ids)
    history = prompt_ids if use_history else None

    def step(tokens: mx.array):
        nonlocal history
        logits = lm.model(tokens[None], cache=cache)[:, -1, :]  # (1, V)
        token, packed, raw = sample(logits, history)
        if use_history:
            history = mx.concatenate([history, token])
        return token, (packed, raw)

    # Prefill all but the last prompt token in chunks; the last one makes step 0.
    done_prefill = 0
    yield PrefillRecord(0, n_prompt, time.perf_counter() - t0)
    while n_prompt - done_prefill > 1:
        if should_stop():
            yield _done(lm, "cancelled", "", enc, 0, t0, None, None, cache, seed)
            return
        n = min(settings.prefill_chunk, n_prompt - done_prefill - 1)
        lm.model(prompt_ids[done_prefill : done_prefill + n][None], cache=cache)
        mx.eval([c.state for c in cache])
        done_prefill += n
        yield PrefillRecord(done_prefill, n_prompt, time.perf_counter() - t0)

    detok = lm.tokenizer.detokenizer
    eos = set(lm.tokenizer.eos_token_ids)
    y, packed = step(prompt_ids[done_prefill:])
    mx.async_eval(y, packed)
    text, reason = "", "length"
    t_first = t_prev = None
    n_gen = 0
    while True:
        if should_stop():
            reason = "cancelled"
            break
        if n_gen + 1 < max_tokens:
            next_y, next_packed = step(y)
            mx.async_eval(next_y, next_packed)
        stats = unpack(packed[0].tolist(), sample.n)
        if not on_device:  # overlaps with the next step already running in MLX
            logz, ent = temperature_sweep_np(np.array(packed[1], copy=False))
            stats = dataclasses.replace(stats, sweep_logz=logz, sweep_entropy=ent)
        now = time.perf_counter()
        if t_first is None:
            t_first = t_prev = now
            yield PrefillRecord(n_prompt, n_prompt, now - t0)
        if stats.token_id in eos:
            reason = "stop"
            break
        detok.add_token(stats.token_id)
        piece = detok.last_segment
        text += piece
        yield _token_record(lm, stats, n_gen, piece, now - t0, now - t_prev, n_prompt)
        t_prev = now
        n_gen += 1
        if hit := _stop_hit(text, settings.stop):
            text, reason = text[: text.index(hit)], "stop"
            break
        if n_gen >= max_tokens:
            break
        y, packed = next_y, next_packed
    detok.finalize()
    if reason != "stop" and detok.last_segment:
        text += detok.last_segment
    yield _done(lm, reason, text, enc, n_gen, t0, t_first, t_prev, cache, seed)


def _stop_hit(text: str, stops: tuple[str, ...]) -> str | None:
    for s in stops:
        if s in text:
            return s
    return None


def _token_record(lm, stats, step, piece, elapsed, latency, n_prompt) -> TokenRecord:
    text_of = lm.token_text
    return TokenRecord(
        step=step,
        token_id=stats.token_id,
        text=piece,
        logprob=stats.logprob,
        prob=float(2.718281828459045**stats.logprob),
        sampled_logprob=stats.sampled_logprob,
        top=candidates(stats.top_ids, stats.top_logprobs, text_of),
        sampled_top=candidates(stats.sampled_top_ids, stats.sampled_top_logprobs, text_of),
        entropy=max(stats.entropy, 0.0),
        sampled_entropy=max(stats.sampled_entropy, 0.0),
        elapsed_s=elapsed,
        latency_s=latency,
        context_tokens=n_prompt + step + 1,
        sweep_logz=tuple(stats.sweep_logz),
        sweep_entropy=tuple(max(h, 0.0) for h in stats.sweep_entropy),
    )


def _done(lm, reason, text, enc, n_gen, t0, t_first, t_last, cache, seed):
    now = time.perf_counter()
    n_prompt = len(enc.ids)
    ttft = (t_first - t0) if t_first is not None else 0.0
    decode_s = (t_last - t_first) if t_first is not None else 0.0
    return DoneRecord(
        finish_reason=reason,
        text=text,
        prompt_tokens=n_prompt,
        generated_tokens=n_gen,
        ttft_s=ttft,
        prefill_tps=n_prompt / ttft if ttft > 0 else 0.0,
        decode_tps=(n_gen - 1) / decode_s if n_gen > 1 and decode_s > 0 else 0.0,
        peak_memory_bytes=int(mx.get_peak_memory()),
        kv_cache_bytes=kv_cache_bytes(cache),
        context_length=lm.context_length,
        seed=seed,
        elapsed_s=now - t0,
        system_tokens=enc.system_tokens,
    )
