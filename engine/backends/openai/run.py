"""The records of one remote run, built from what the server streamed.

Token times are when each chunk arrived here (what the user saw); prefill and
decode speeds come only from the server's own report (llama.cpp's `timings`),
never from arrival times, which include the network.
"""

from __future__ import annotations

import math
import time

from engine.backends.openai.shapes import TokenInfo, entropy_top_k, stand_in_id, sweep_top_k
from engine.models.token_bytes import TextStream
from engine.run.records import DoneRecord, TokenRecord
from engine.sessions.sanitize import clean_logprob, clean_top, sanitize_done, sanitize_token


class RemoteRun:
    """One remote run's state: its token records, text, timings and the server's usage."""

    def __init__(self, t0: float, top_n: int, seed: int | None, context_length: int | None):
        self.t0, self.top_n, self.seed, self.context_length = t0, top_n, seed, context_length
        self.tokens: list[TokenRecord] = []
        self.text = ""
        self.stream = TextStream()
        self.t_first = self.t_last = None
        self.usage: dict = {}
        self.timings: dict = {}

    def note_usage(self, chunk: dict) -> None:
        """Keep a chunk's `usage` and llama.cpp `timings` (checked when used)."""
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.timings = chunk["timings"]

    # -- tokens ---------------------------------------------------------------------
    def add_chunk(
        self, text: str, entries: list[TokenInfo], t: float, thinking: bool = False
    ) -> list[TokenRecord]:
        """Records for one chunk: one per logprobs entry, or one for its text.
        `thinking`: the chunk is reasoning (not added to the answer's text)."""
        if not entries:
            if not text:
                return []
            self.text += "" if thinking else text
            return self._keep(
                [self._record(TokenInfo(text), text, t, len(self.tokens), thinking=thinking)]
            )
        pieces = [self.stream.add(e.raw) if e.raw is not None else e.text for e in entries]
        if "".join(pieces) != text and text:
            pieces = [text] + [""] * (len(entries) - 1)  # the chunk's text is what counts
        self.text += "" if thinking else "".join(pieces)
        n = len(self.tokens)
        pairs = enumerate(zip(entries, pieces, strict=True))
        return self._keep([self._record(e, p, t, n + i, thinking=thinking) for i, (e, p) in pairs])

    def _keep(self, records: list[TokenRecord]) -> list[TokenRecord]:
        self.tokens.extend(records)
        return records

    def _record(
        self,
        info: TokenInfo,
        piece: str,
        t: float,
        step: int,
        eos: bool = False,
        thinking: bool = False,
    ) -> TokenRecord:
        latency = t - (self.t_last if self.t_last is not None else self.t0)
        if self.t_first is None:
            self.t_first = t
        self.t_last = t
        notes = list(info.oddities)
        top = clean_top(info.top[: self.top_n], notes)  # entropy from valid values only
        if info.token_id is not None and info.token_id >= 0:
            tid = info.token_id
        elif info.raw is not None or info.text:
            tid = stand_in_id(info.raw, info.text)
        else:
            tid = -1
        lp = None if info.logprob == -math.inf else info.logprob  # -inf: filtered out
        lp = clean_logprob(lp, "the log-probability", notes)
        post = info.post_sampling
        logz, ent = sweep_top_k(list(top)) if top and not post else ((), ())
        record = TokenRecord(
            step=step,
            token_id=tid,
            text=piece,
            logprob=None if post else lp,
            prob=None if post or lp is None else math.exp(lp),
            sampled_logprob=lp if post else None,
            top=() if post else top,
            sampled_top=top if post else (),
            entropy=None if post else entropy_top_k(list(top)),
            sampled_entropy=entropy_top_k(list(top)) if post else None,
            elapsed_s=t - self.t0,
            latency_s=max(latency, 0.0),
            context_tokens=(_count(self.usage.get("prompt_tokens")) or 0) + step + 1,
            sweep_logz=logz,
            sweep_entropy=ent,
            bytes=tuple(info.raw) if info.raw is not None else None,
            eos=eos,
            thinking=thinking,
            oddities=tuple(dict.fromkeys(notes)),
        )
        return sanitize_token(record)  # what is shown is what the journal keeps

    def refine(self, infos: list[TokenInfo], eos_last: bool) -> list[TokenRecord]:
        """Re-send every token with what a second, non-streamed pass reported (the
        arrival times of the streamed pass are kept, spread over the new tokens)."""
        stamps = [r.elapsed_s + self.t0 for r in self.tokens] or [time.perf_counter()]
        self.tokens, self.t_first, self.t_last = [], None, None
        for k, info in enumerate(infos):
            t = stamps[min(k * len(stamps) // max(len(infos), 1), len(stamps) - 1)]
            eos = eos_last and k == len(infos) - 1
            self.tokens.append(self._record(info, "" if eos else info.text, t, k, eos))
        return list(self.tokens)

    # -- the end --------------------------------------------------------------------
    def done(self, reason: str, error: str | None = None) -> DoneRecord:
        """The run's DoneRecord (sanitised), with the server's own timings where it sent them."""
        self.text += self.stream.flush() if reason != "error" else ""
        n_text = sum(1 for r in self.tokens if not r.eos)
        tm = self.timings
        prompt_ms, predicted_ms = _ms(tm.get("prompt_ms")), _ms(tm.get("predicted_ms"))
        prompt_n, predicted_n = _count(tm.get("prompt_n")), _count(tm.get("predicted_n"))
        from_server = prompt_ms is not None and prompt_n is not None
        prompt_tokens = _count(self.usage.get("prompt_tokens"))
        if prompt_tokens is None and from_server:
            prompt_tokens = prompt_n + (_count(tm.get("cache_n")) or 0)
        decode_ok = predicted_ms is not None and predicted_n is not None
        return sanitize_done(
            DoneRecord(
                finish_reason=reason,
                text=self.text,
                prompt_tokens=prompt_tokens,
                generated_tokens=n_text,
                ttft_s=(self.t_first - self.t0) if self.t_first is not None else None,
                prefill_tps=prompt_n / prompt_ms * 1e3 if from_server and prompt_ms > 0 else None,
                decode_tps=predicted_n / predicted_ms * 1e3
                if decode_ok and predicted_ms > 0
                else None,
                peak_memory_bytes=None,
                kv_cache_bytes=None,
                context_length=self.context_length,
                seed=self.seed,
                elapsed_s=time.perf_counter() - self.t0,
                error=error,
                prefill_s=prompt_ms / 1e3 if from_server else None,
                decode_s=predicted_ms / 1e3 if decode_ok else None,
                timings_from="server" if from_server else "client",
                thinking_tokens=sum(r.thinking for r in self.tokens),
            )
        )


MAX_COUNT = 10**12  # larger token counts or milliseconds from a server are nonsense


def _count(v) -> int | None:
    """A token count a server reported, or None when it is not a sane whole number."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT else None


def _ms(v) -> float | None:
    """A duration in ms a server reported, or None when it is not a sane number."""
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok and 0 <= v <= MAX_COUNT else None
