"""Reading a text through the loaded model: one teacher-forced pass, in chunks.

The text's tokens follow a context (text, a chat conversation, or the model's
start token); every text token gets the TokenRecord a generated token gets, with
`read` set and its `rank`, then one DoneRecord whose `reading` is the summary.
Chunks reuse the KV cache; each chunk's logits are reduced on the device
(read_reduce.py), so the host holds a few lists per chunk, never (tokens x
vocabulary). `should_stop` is checked between chunks.

A text longer than the context window is refused with the numbers, or read with
a sliding window of W tokens (W = the model's context): when the window is full,
the model starts again from the last W // 2 tokens (read again as context, not
scored again), so once it slides each token is predicted from W // 2 + 1 to W
tokens before it. A token's `context_tokens` is the number of tokens in the
window once it is added (the tokens it was predicted from, plus itself).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import mlx.core as mx

from engine.backends.mlx.instrument import candidates
from engine.backends.mlx.read_reduce import ChunkStats, reduce_chunk
from engine.backends.mlx.run_records import kv_cache_bytes, kv_cache_tokens
from engine.errors import SettingsError
from engine.models.token_bytes import TextStream
from engine.reading.read_stats import ReadTally
from engine.reading.request import ReadRequest
from engine.run.records import DoneRecord, PrefillRecord, Record, TokenRecord, token_label

LOGITS_BUDGET = 16 * 2**20  # bytes of float32 logits per chunk (the default chunk size)
MIN_CHUNK, MAX_DEFAULT_CHUNK = 16, 256
CHUNK_TARGET_S = 0.5  # a default-sized chunk shrinks to about this long: a cancel waits no more
MIN_ADAPTED_CHUNK = 4


class TextTooLong(SettingsError):
    """The text does not fit the context window and the caller refused a window."""

    def __init__(self, message: str, tokens: int, context_length: int):
        super().__init__(message)
        self.tokens, self.context_length = tokens, context_length


@dataclass(frozen=True)
class ReadPlan:
    """The token ids of one read and how they are fed.

    Attributes:
        ids: the context's ids (or the start token), then the text's.
        n_context: how many of `ids` come before the text.
        system_tokens: of those, the chat template's system part.
        start_token: the start token used without a context ("" otherwise).
        window: the sliding window (None: the text fits).
        keep: tokens kept when the window slides (None: no window).
        chunk: input tokens per forward pass.
    """

    ids: list[int]
    n_context: int
    system_tokens: int
    start_token: str
    window: int | None
    keep: int | None
    chunk: int


def default_chunk(vocab_size: int) -> int:
    """Tokens per chunk so that its float32 logits stay within LOGITS_BUDGET."""
    return max(MIN_CHUNK, min(MAX_DEFAULT_CHUNK, LOGITS_BUDGET // (4 * max(vocab_size, 1))))


DOCUMENT_SEPARATORS = ("<|endoftext|>",)  # GPT-2's, SmolLM's, Qwen's: between texts


def start_token_id(tok) -> int | None:
    """The token a text starts after, as the model saw texts start in training: the
    beginning-of-sequence token when the tokenizer adds one itself (Gemma's <bos>,
    Llama's); else the document separator (<|endoftext|>: a chat model's "bos" may be
    a chat marker such as SmolLM2's <|im_start|>, which expects a role name next);
    else the beginning-, else the end-of-sequence token. None: the model has none."""
    bos = getattr(tok, "bos_token_id", None)
    try:
        probe = list(tok.encode("a"))
    except Exception:  # noqa: BLE001 - a tokenizer that cannot say: use the fallbacks
        probe = []
    if bos is not None and probe and probe[0] == bos:
        return int(bos)
    to_id, to_token = (
        getattr(tok, n, None) for n in ("convert_tokens_to_ids", "convert_ids_to_tokens")
    )
    for name in DOCUMENT_SEPARATORS if callable(to_id) and callable(to_token) else ():
        try:  # a name not in the vocabulary maps to the unknown token: check it maps back
            found = to_id(name)
            if isinstance(found, int) and found >= 0 and to_token(found) == name:
                return found
        except Exception:  # noqa: BLE001, S112 - not in this vocabulary
            continue
    first = bos if bos is not None else getattr(tok, "eos_token_id", None)
    return None if first is None else int(first)


def encode_read(lm, request: ReadRequest) -> tuple[list[int], int, int, str]:
    """The ids of context and text, the context's length, its system tokens and the
    start token's label ("" with a context).

    Raises:
        SettingsError: the text has no tokens, or the model has no start token.
    """
    tok = lm.tokenizer
    text_ids = list(tok.encode(request.text, add_special_tokens=False))
    if not text_ids:
        raise SettingsError("the text has no tokens: give some text to read")
    context, system, start = request.context, 0, ""
    if isinstance(context, list):
        from engine.run.prompt import encode_prompt
        from engine.run.settings import SamplingSettings

        enc = encode_prompt(tok, context, SamplingSettings(chat_template=True))
        ctx, system = list(enc.ids), enc.system_tokens
    elif context:
        ctx = list(tok.encode(context))  # with the tokenizer's own start token, if any
    else:
        first = start_token_id(tok)
        if first is None:
            raise SettingsError("this model has no start token: give a context to read after")
        ctx = [first]
        start = token_label(lm.token_bytes(first), f"<{first}>")
    if not ctx:  # a context that encodes to nothing: the start token's job
        return encode_read(lm, request.with_(context=None))
    return ctx + text_ids, len(ctx), system, start


def plan_read(lm, request: ReadRequest) -> ReadPlan:
    """Encode the request and choose chunk and window.

    Raises:
        TextTooLong: it does not fit and `request.long_text` is "refuse".
        SettingsError: an empty text.
    """
    ids, n_ctx, system, start = encode_read(lm, request)
    width = int(lm.context_length)
    chunk = request.chunk_tokens or default_chunk(lm.vocab_size)
    fed = len(ids) - 1  # the last token is scored, never fed
    if fed <= width:
        return ReadPlan(ids, n_ctx, system, start, None, None, min(chunk, width))
    if request.long_text == "refuse":
        over = fed - width
        raise TextTooLong(
            f"the text is {len(ids) - n_ctx:,} tokens (after {n_ctx:,} of context) but the "
            f"model's context window is {width:,} tokens: read it with a sliding window, "
            f"or shorten it by {over:,} token{'s' * (over != 1)}",
            len(ids),
            width,
        )
    keep = width // 2
    return ReadPlan(ids, n_ctx, system, start, width, keep, max(1, min(chunk, width - keep)))


def read_records(
    lm,
    request: ReadRequest,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[Record]:
    """Read `request.text` with the loaded model (see the module docstring).

    Args:
        lm: the LoadedModel (engine/backends/mlx/generate.py).
        request: what to read (validated here).
        should_stop: polled between chunks; True ends the read as "cancelled".
        progress: called with (tokens read, tokens in the text) after each chunk.

    Yields:
        PrefillRecord (the context), a TokenRecord per text token (`read` set),
        then one DoneRecord with `reading` (finish_reason "read" or "cancelled").

    Raises:
        SettingsError: a bad request, or TextTooLong (before any record).
    """
    request.validate()
    lm.token_bytes(0)  # the byte table, built before the clock starts
    t0 = time.perf_counter()
    plan = plan_read(lm, request)
    ids, n_ctx = plan.ids, plan.n_context
    n_text = len(ids) - n_ctx
    yield PrefillRecord(0, n_ctx, 0.0, plan.system_tokens)
    mx.reset_peak_memory()
    tally, stream, text = ReadTally(), TextStream(), []
    n = min(request.top_n, lm.vocab_size - 1)
    feeder = _Feeder(lm, ids, plan, should_stop)
    a, t_first, cancelled = n_ctx - 1, None, False  # a: the chunk's first input position
    chunk = plan.chunk
    while a < len(ids) - 1:
        b = min(a + chunk, len(ids) - 1)  # inputs ids[a:b] predict ids[a+1:b+1]
        t = time.perf_counter()
        logits = None if should_stop() else feeder.logits(a, b)  # (L, V), lazy
        if logits is None:  # asked to stop (maybe while a window was re-read)
            cancelled = True
            break
        if a == n_ctx - 1:
            yield PrefillRecord(n_ctx, n_ctx, time.perf_counter() - t0, plan.system_tokens)
        stats = reduce_chunk(logits, mx.array(ids[a + 1 : b + 1]), n, request.sweep)
        t_known = time.perf_counter()
        t_first = t_first if t_first is not None else t_known
        latency = (t_known - t) / (b - a)
        for i in range(b - a):
            pos = a + 1 + i  # the scored token's index in ids
            raw = lm.token_bytes(ids[pos])
            piece = stream.add(raw)
            text.append(piece)
            where = (pos - n_ctx, t_known - t0, latency, pos - feeder.base + 1)
            record = _token(lm, stats, i, where, ids[pos], piece, raw, request.sweep)
            tally.add(record)
            yield record
        a = b
        if request.chunk_tokens is None:  # the next chunk sized to about CHUNK_TARGET_S
            chunk = _adapted(plan.chunk, (t_known - t) / len(stats.logprob))
        if progress is not None:
            progress(a + 1 - n_ctx, n_text)
    text.append(stream.flush())
    read_s = (t_known if t_first is not None else time.perf_counter()) - t0
    summary = tally.summary(
        context_tokens=n_ctx,
        start_token=plan.start_token,
        window=plan.window,
        window_keep=plan.keep,
        context_length=int(lm.context_length),
        read_s=read_s,
        complete=not cancelled,
        text_bytes=len(request.text.encode("utf-8")),
    )
    fed = a if t_first is not None else 0  # input tokens fed (a window's re-reads aside)
    yield DoneRecord(
        finish_reason="cancelled" if cancelled else "read",
        text="".join(text),
        prompt_tokens=n_ctx,
        generated_tokens=tally.tokens,
        ttft_s=(t_first - t0) if t_first is not None else None,
        prefill_tps=fed / read_s if fed and read_s > 0 else None,
        decode_tps=None,  # nothing is decoded: every token is read in chunks
        peak_memory_bytes=int(mx.get_peak_memory()),
        kv_cache_bytes=kv_cache_bytes(feeder.cache) if feeder.cache else 0,
        kv_cache_tokens=kv_cache_tokens(feeder.cache) if feeder.cache else 0,
        context_length=int(lm.context_length),
        seed=None,
        elapsed_s=time.perf_counter() - t0,
        system_tokens=plan.system_tokens,
        prefill_s=read_s,
        reading=summary,
    )


class _Feeder:
    """Feeds the model chunk by chunk, keeping (or, with a window, restarting) the
    KV cache: `base` is the index of the first token the cache holds."""

    def __init__(self, lm, ids: list[int], plan: ReadPlan, should_stop: Callable[[], bool]):
        self.lm, self.ids, self.plan, self.should_stop = lm, ids, plan, should_stop
        self.cache, self.base = None, 0
        body = getattr(lm.model, "model", None)
        self.body = body if callable(body) else lm.model  # no vocabulary head for context

    def logits(self, a: int, b: int) -> mx.array | None:
        """(b - a, V) logits of inputs ids[a:b], the cache holding ids[base:a] first;
        None when asked to stop while the cache was being filled."""
        width = self.plan.window
        stale = self.cache is None or (width is not None and b - self.base > width)
        base = 0 if width is None or b <= width else a - self.plan.keep
        if stale and not self._restart(base, a):
            return None
        x = mx.array(self.ids[a:b])[None]  # (1, L)
        return self.lm.model(x, cache=self.cache)[0]  # (L, V)

    def _restart(self, base: int, a: int) -> bool:
        """A fresh cache holding ids[base:a] (fed without the vocabulary head); False
        when asked to stop on the way (the cache is then dropped)."""
        from mlx_lm.models.cache import make_prompt_cache

        from engine.backends.mlx.prompt_reuse import new_cache

        self.cache, self.base = new_cache(self.lm, make_prompt_cache), base
        step = max(self.plan.chunk, MIN_CHUNK)
        for s in range(base, a, step):
            if self.should_stop():
                self.cache = None
                return False
            self.body(mx.array(self.ids[s : min(s + step, a)])[None], cache=self.cache)
            mx.eval([c.state for c in self.cache])
        return True


def _adapted(largest: int, per_token: float) -> int:
    """Tokens per chunk for about CHUNK_TARGET_S at `per_token` seconds a token."""
    return max(MIN_ADAPTED_CHUNK, min(largest, int(CHUNK_TARGET_S / max(per_token, 1e-6))))


def _token(lm, stats: ChunkStats, i: int, where, token_id: int, piece, raw, sweep) -> TokenRecord:
    """The TokenRecord of position `i` of a chunk; `where` is (step, elapsed_s,
    latency_s, context_tokens)."""
    step, elapsed, latency, context = where
    lp, ent = stats.logprob[i], max(stats.entropy[i], 0.0)
    top = candidates(stats.top_ids[i], stats.top_logprobs[i], lm.token_bytes)
    return TokenRecord(
        step=step,
        token_id=token_id,
        text=piece,
        logprob=lp,
        prob=math.exp(lp),
        sampled_logprob=lp,  # read at T = 1 without filters: the raw distribution
        top=top,
        sampled_top=top,
        entropy=ent,
        sampled_entropy=ent,
        elapsed_s=elapsed,
        latency_s=latency,
        context_tokens=context,
        sweep_logz=tuple(stats.sweep_logz[i]) if sweep else (),
        sweep_entropy=tuple(max(h, 0.0) for h in stats.sweep_entropy[i]) if sweep else (),
        bytes=tuple(raw),
        sampled_probs=tuple(min(math.exp(c.logprob), 1.0) for c in top),
        rank=stats.rank[i],
        read=True,
    )
