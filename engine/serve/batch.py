"""Continuous batching: the requests in flight decoded together, every token recorded.

mlx-lm's BatchGenerator runs the batch (prefill of new prompts beside the decode
of running ones, each sequence leaving when it ends). Every request shares one
sampler (batch_stats.py), which samples the whole batch and computes each row's
statistics as `logitscope generate` does (logprob, top list, entropies, the
sampled-from distribution, the temperature sweep) in one graph per step, read
back once; each request keeps a FIFO of (step, row) until BatchGenerator hands
its token back one step later.

Seeds: the engine seeds MLX's global generator once per run and each draw splits
its key. Here every request keeps its own key and splits it the same way for its
own draw, so a seeded request draws exactly what a serial run with that seed
draws, whatever else is in the batch. Text stop strings end a request from here; the
end-of-sequence tokens and max_tokens end it inside BatchGenerator. A request
whose prompt shares a prefix with a kept cache (prompt_reuse.py) starts from it.
"""

from __future__ import annotations

import random
import time
from collections import deque

import mlx.core as mx

from engine.backends.mlx.prompt_reuse import Reuse, finish, start_cache
from engine.backends.mlx.run_records import RunRecords
from engine.run.prompt import encode_prompt
from engine.run.records import PrefillRecord
from engine.serve.batch_stats import BatchSampler, RowSampler
from engine.serve.jobs import END, JobSource

PREFILL_STEP = 512  # prompt tokens per prefill step of a batch


class Slot:
    """One request in the batch: its job, records, sampling row and pending stats."""

    def __init__(self, lm, job, t0: float):
        s = job.req.settings
        self.job, self.t0, self.settings = job, t0, s
        self.enc = encode_prompt(lm.tokenizer, job.req.prompt, s)
        self.ids = list(self.enc.ids)
        self.seed = s.seed if s.seed is not None else random.randrange(2**31)
        self.reuse: Reuse = start_cache(lm, self.ids, s.prompt_cache)
        self.records = RunRecords(lm, self.enc, self.seed, t0, self.reuse.cache)
        history = mx.array(self.ids) if s.repetition_penalty != 1.0 else None
        self.row = RowSampler(s, lm.vocab_size, mx.random.key(self.seed), history)
        self.pending: deque = deque()  # (StepBatch, row) of drawn tokens, oldest first
        self.max_steps = min(s.max_tokens, lm.context_length - len(self.ids))
        self.t_prefill = time.perf_counter()


def run_batched(scheduler: JobSource) -> None:
    """Decode waiting and running jobs together until the server stops."""
    from mlx_lm.generate import BatchGenerator

    lm = scheduler.lm
    eos = set(lm.tokenizer.eos_token_ids)
    live: dict[int, Slot] = {}
    rows: dict = {}  # uid -> RowSampler, what the shared sampler reads

    def on_step(uids, _tokens, step) -> None:
        for i, uid in enumerate(uids):
            if (slot := live.get(uid)) is not None:
                slot.pending.append((step, i))

    gen = BatchGenerator(
        lm.model,
        stop_tokens=[[e] for e in eos],
        sampler=BatchSampler(rows, on_step),
        completion_batch_size=scheduler.max_batch,
        prefill_batch_size=scheduler.max_batch,
        prefill_step_size=PREFILL_STEP,
    )
    try:
        while not scheduler.stopping:
            for job in scheduler.take(block=not live):
                with scheduler.compute:  # its prompt's cache and prefill
                    _admit(scheduler, gen, live, rows, job)
            gone = [uid for uid, slot in live.items() if slot.job.cancelled.is_set()]
            if gone:
                gen.remove(gone)
                for uid in gone:
                    rows.pop(uid, None)
                    _end(scheduler, live.pop(uid), "cancelled", None)
            if not live:
                continue
            with scheduler.compute:  # one step of the batch, its tokens' records
                _prompt_responses, responses = gen.next()
                for r in responses:
                    _token(scheduler, gen, live, rows, r, eos)
    finally:
        for slot in live.values():
            _end(scheduler, slot, "cancelled", None)
        gen.close()


def _admit(scheduler: JobSource, gen, live: dict, rows: dict, job) -> None:
    t0 = time.perf_counter()
    try:
        scheduler.begin(job)
        slot = Slot(scheduler.lm, job, t0)
    except Exception as e:  # noqa: BLE001 - told to the client, the batch goes on
        scheduler.fail(job, e)
        scheduler.finished()
        return
    cached, total = slot.reuse.cached, len(slot.ids)
    _send(slot, PrefillRecord(0, total, time.perf_counter() - t0, slot.enc.system_tokens, cached))
    (uid,) = gen.insert(
        [slot.ids[cached:]],
        max_tokens=[slot.max_steps],
        caches=[slot.reuse.cache],
        all_tokens=[slot.ids[:cached]],
        logits_processors=[[slot.row.keep_logits]] if slot.row.history is not None else None,
    )
    live[uid] = slot
    rows[uid] = slot.row


def _send(slot: Slot, record) -> None:
    slot.job.run.record(record)
    slot.job.put(record)


def _token(scheduler: JobSource, gen, live: dict, rows: dict, r, eos: set) -> None:
    slot = live.get(r.uid)
    if slot is None:
        return
    t_known = time.perf_counter()
    step, row = slot.pending.popleft()
    stats = step.stats(row)
    run = slot.records
    if run.n_timed == 0:
        total = len(slot.ids)
        elapsed = t_known - slot.t0
        _send(slot, PrefillRecord(total, total, elapsed, slot.enc.system_tokens, slot.reuse.cached))
    is_eos = stats.token_id in eos
    _send(slot, run.token(stats, t_known, is_eos))
    reason = "eos" if is_eos else None
    if reason is None and (hit := _stop_hit(run.text, slot.settings.stop)):
        run.text = run.text[: run.text.index(hit)]
        reason = "stop_string"
        gen.remove([r.uid], return_prompt_caches=False)
    if reason is None and r.finish_reason is not None:
        reason = "length"
    if reason is None:
        return
    live.pop(r.uid)
    rows.pop(r.uid, None)
    _end(scheduler, slot, reason, r)


def _stop_hit(text: str, stops) -> str | None:
    return next((s for s in stops if s in text), None)


def _end(scheduler: JobSource, slot: Slot, reason: str, response) -> None:
    """The run's done record, its cache kept for later prompts, the job released."""
    try:
        cache = getattr(response, "prompt_cache", None)
        if cache is not None:
            slot.records.cache = cache
            held = list(response.all_tokens)
            finish(scheduler.lm, Reuse(cache, 0), held, len(held))
        else:
            slot.records.cache = []
        done = slot.records.done(reason, slot.t_prefill, slot.reuse.cached, len(slot.ids))
        _send(slot, done)
        slot.job.run.end("cancelled" if reason == "cancelled" else "done")
        slot.job.put(END)
    except Exception as e:  # noqa: BLE001 - told to the client, the batch goes on
        scheduler.fail(slot.job, e)
    finally:
        scheduler.finished()
