"""The records of one run: token text from bytes, timings from step stamps.

`RunRecords` turns each decoded step (its StepStats and the time its value was
known) into a TokenRecord and the run's end into its DoneRecord. A branch starts
at answer step K: the shared prefix's bytes and thinking state are fed in first,
so its text and step numbers continue the parent's, and a forced token (chosen by
the person, not sampled) is neither a first token nor a decode step.
"""

from __future__ import annotations

import math
import time

import mlx.core as mx

from engine.backends.mlx.instrument import StepStats, candidates
from engine.models.token_bytes import TextStream
from engine.run.records import DoneRecord, TokenRecord, TopToken
from engine.run.series import decode_tps


def kv_cache_bytes(cache) -> int:
    """Bytes of the KV cache actually holding tokens (not the preallocated tail)."""
    total = 0
    for c in cache:
        keys = getattr(c, "keys", None)
        if keys is None:
            continue
        # a quantized cache holds (data, scales, biases) for keys and for values
        parts = [*keys, *c.values] if isinstance(keys, tuple | list) else [keys, c.values]
        if not all(hasattr(p, "shape") for p in parts):
            continue
        size = parts[0].shape[2]
        used = min(getattr(c, "offset", size), size)
        total += sum(p.nbytes for p in parts) * used // size
    return total


def kv_cache_tokens(cache) -> int:
    """Tokens fed through the model so far: the last sampled token is only fed on when
    the next step ran (pipelined decode runs it early), so it is read, not inferred."""
    return max((int(getattr(c, "offset", 0)) for c in cache), default=0)


class RunRecords:
    """The records of one run (see the module docstring).

    Args:
        lm: the LoadedModel.
        enc: the EncodedPrompt (the turn's prompt, without a branch's prefix).
        seed: the run's seed.
        t0: perf_counter when the request began.
        cache: the run's KV cache (read for the done record).
        prefix: a branch's shared answer prefix (token ids of steps 0..K-1).
    """

    def __init__(self, lm, enc, seed: int, t0: float, cache, prefix=()):
        self.lm, self.enc, self.seed, self.t0, self.cache = lm, enc, seed, t0, cache
        self.stream = TextStream()
        self.text = ""
        self.think = lm.think_tracker(enc.ids)
        self.branch_step = len(prefix) if prefix else None
        eos = set(lm.tokenizer.eos_token_ids)
        for tid in prefix:  # the parent's answer so far: its text and thinking state
            if tid not in eos:
                self.text += self.stream.add(lm.token_bytes(tid))
                if self.think:
                    self.think.add(tid)
        self.n_steps = len(prefix)  # the next record's step
        self.n_text = sum(1 for t in prefix if t not in eos)
        self.n_timed = 0  # steps the model sampled in this run (the decode speed's)
        self.t_first = self.t_last = self.t_prev = None

    def token(
        self, stats: StepStats, t_known: float, is_eos: bool, forced: bool = False
    ) -> TokenRecord:
        """The TokenRecord of one step; `t_known` is when its value was known. A
        forced step is not timed: the first sampled token is the first token."""
        raw = self.lm.token_bytes(stats.token_id)
        piece = "" if is_eos else self.stream.add(raw)
        self.text += piece
        latency = t_known - (self.t_prev if self.t_prev is not None else self.t0)
        self.t_prev = t_known
        if not forced:
            if self.t_first is None:
                self.t_first = t_known
            self.t_last = t_known
            self.n_timed += 1
        step = self.n_steps
        self.n_steps += 1
        self.n_text += 0 if is_eos else 1
        thinking = self.think.add(stats.token_id) if self.think and not is_eos else False
        return token_record(
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
            forced,
        )

    def done(self, reason: str, t_prefill: float, cached: int = 0, fed: int = 0) -> DoneRecord:
        """The run's DoneRecord. `fed`: tokens the run sent the model before its first
        step (prompt, and a branch's prefix); `cached` of them came from the KV cache
        and are left out of the prefill speed."""
        if reason not in ("stop_string",):
            self.text += self.stream.flush()
        n_prompt = len(self.enc.ids)
        fed = fed or n_prompt
        prefill_s = (self.t_first - t_prefill) if self.t_first is not None else None
        decode_s = (self.t_last - self.t_first) if self.n_timed >= 2 else None
        computed = fed - cached
        return DoneRecord(
            finish_reason=reason,
            text=self.text,
            prompt_tokens=n_prompt,
            generated_tokens=self.n_text,
            ttft_s=(self.t_first - self.t0) if self.t_first is not None else None,
            prefill_tps=computed / prefill_s if prefill_s and computed > 0 else None,
            decode_tps=decode_tps(self.n_timed, self.t_first, self.t_last),
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
            branch_step=self.branch_step,
        )


def token_record(
    lm, stats, step, piece, raw, elapsed, latency, n_prompt, is_eos, thinking, forced=False
) -> TokenRecord:
    """One step's TokenRecord from its StepStats (candidates' bytes from the vocabulary)."""
    bytes_of = lm.token_bytes
    sampled_lp = stats.sampled_logprob
    if forced and (sampled_lp is None or not math.isfinite(sampled_lp)):
        sampled_lp = None  # the person chose a token the sampler could not have drawn
    return TokenRecord(
        step=step,
        token_id=stats.token_id,
        text=piece,
        logprob=stats.logprob,
        prob=math.exp(stats.logprob),
        sampled_logprob=sampled_lp,
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
        forced=forced,
    )


def stats_from_record(at: dict, token_id: int) -> StepStats | None:
    """The StepStats of a recorded step with `token_id` as its token: the parent's
    distribution at a branch point, reused instead of recomputed. None when the
    token is not among the record's candidates (its log-probability is unknown)."""
    top = [TopToken(**t) if isinstance(t, dict) else t for t in at.get("top", ())]
    found = [t.logprob for t in top if t.token_id == token_id]
    if not found or at.get("entropy") is None:
        return None
    stop = [TopToken(**t) if isinstance(t, dict) else t for t in at.get("sampled_top", ())]
    sampled = [t.logprob for t in stop if t.token_id == token_id]
    probs = list(at.get("sampled_probs", ()))
    return StepStats(
        token_id=token_id,
        logprob=found[0],
        sampled_logprob=sampled[0] if sampled else float("-inf"),
        entropy=at["entropy"],
        sampled_entropy=at.get("sampled_entropy") or 0.0,
        top_ids=[t.token_id for t in top],
        top_logprobs=[t.logprob for t in top],
        sampled_top_ids=[t.token_id for t in stop],
        sampled_top_logprobs=[t.logprob for t in stop],
        sampled_probs=probs,
        sweep_logz=list(at.get("sweep_logz", ())),
        sweep_entropy=list(at.get("sweep_entropy", ())),
    )
