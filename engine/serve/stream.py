"""Records to OpenAI's shapes: streamed chunks and whole responses.

Chat: `chat.completion.chunk` / `chat.completion`, logprobs as `{content: [entry]}`
with each entry `{token, logprob, bytes, top_logprobs: [...]}` (engine/run/openai_chunks.py)
plus `id` on the entry and on each candidate (an extension; OpenAI sends none).
Completions: `text_completion`, logprobs in the legacy parallel lists (`tokens`,
`token_logprobs`, `top_logprobs`, `text_offset`) plus the same `content` entries.

The end-of-sequence step is recorded in the journal but not sent (OpenAI sends
no token for it). With stop strings, text that may be the start of one is held
back until it is known not to be, so a stop string never reaches the client.
"""

from __future__ import annotations

import time

from engine.run.openai_chunks import FINISH_REASONS, token_logprobs
from engine.serve.validation import ServeRequest


def logprob_entry(record, top: int) -> dict:
    """One `logprobs.content[]` entry with `top` candidates and token ids."""
    entry = token_logprobs(record)
    entry["id"] = record.token_id
    cands = entry["top_logprobs"][:top]
    for c, cand in zip(cands, record.top, strict=False):
        c["id"] = cand.token_id
    entry["top_logprobs"] = cands
    return entry


def usage(done) -> dict:
    """OpenAI's usage object, with the prompt tokens the KV cache gave."""
    prompt = done.prompt_tokens or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": done.generated_tokens,
        "total_tokens": prompt + done.generated_tokens,
        "prompt_tokens_details": {"cached_tokens": done.cached_tokens},
    }


class TextGate:
    """The answer's text as it may be sent: never any part of a stop string."""

    def __init__(self, stops: tuple[str, ...]):
        self.stops, self.full, self.sent = stops, "", ""

    def add(self, piece: str) -> str:
        """Take a token's text; return what can be sent now."""
        self.full += piece
        safe = self.full
        hits = [safe.index(s) for s in self.stops if s in safe]
        if hits:
            safe = safe[: min(hits)]
        else:
            hold = max((_held(safe, s) for s in self.stops), default=0)
            safe = safe[: len(safe) - hold]
        return self._send(safe)

    def finish(self, final: str) -> str:
        """The rest of the answer, given its final text (already cut at a stop)."""
        return self._send(final) if final.startswith(self.sent) else ""

    def _send(self, safe: str) -> str:
        if len(safe) <= len(self.sent):
            return ""
        out, self.sent = safe[len(self.sent) :], safe
        return out


def _held(text: str, stop: str) -> int:
    """Length of the longest end of `text` that starts `stop`."""
    for k in range(min(len(text), len(stop) - 1), 0, -1):
        if stop.startswith(text[-k:]):
            return k
    return 0


class Answer:
    """One request's answer: chunks while it streams, or the response at its end."""

    def __init__(self, req: ServeRequest, request_id: str, model: str):
        self.req, self.model = req, model
        self.id = ("chatcmpl-" if req.chat else "cmpl-") + request_id
        self.created = int(time.time())
        self.gate = TextGate(req.settings.stop)
        self.entries: list[dict] = []
        self.offsets: list[int] = []  # where each token starts in the answer's text
        self.first = True
        self.done = None

    # -- streamed ---------------------------------------------------------------------
    def _chunk(self, choices: list, **extra) -> dict:
        kind = "chat.completion.chunk" if self.req.chat else "text_completion"
        base = {"id": self.id, "object": kind, "created": self.created, "model": self.model}
        return {**base, "choices": choices, **extra}

    def _choice(self, text: str, entries: list[dict] | None, finish: str | None) -> dict:
        lp = None
        if entries is not None and self.req.logprobs:
            lp = self._logprobs(entries, self.offsets[-len(entries) :])
        if not self.req.chat:
            return {"index": 0, "text": text, "logprobs": lp, "finish_reason": finish}
        delta = {"content": text} if text or finish is None else {}
        if self.first and self.req.chat:
            delta, self.first = {"role": "assistant", "content": text}, False
        return {"index": 0, "delta": delta, "logprobs": lp, "finish_reason": finish}

    def chunks(self, record) -> list[dict]:
        """The chunks one record makes (a token's, or the end's)."""
        if record.type == "token":
            if record.eos:
                return []
            entry = logprob_entry(record, self.req.top_logprobs)
            self.entries.append(entry)
            self.offsets.append(len(self.gate.full))
            return [self._chunk([self._choice(self.gate.add(record.text), [entry], None)])]
        if record.type == "done":
            self.done = record
            out = []
            rest = self.gate.finish(record.text)
            if rest:
                out.append(self._chunk([self._choice(rest, None, None)]))
            out.append(self._chunk([self._choice("", None, self.finish_reason)]))
            if self.req.include_usage:
                out.append(self._chunk([], usage=usage(record)))
            return out
        return []

    @property
    def finish_reason(self) -> str:
        """OpenAI's finish reason of the ended run."""
        return FINISH_REASONS.get(self.done.finish_reason, "stop") if self.done else "stop"

    # -- whole ------------------------------------------------------------------------
    def response(self) -> dict:
        """The non-streamed response, once every record went through `chunks`."""
        text = self.done.text
        lp = self._logprobs(self.entries, self.offsets) if self.req.logprobs else None
        if self.req.chat:
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": lp,
                "finish_reason": self.finish_reason,
            }
            kind = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": lp, "finish_reason": self.finish_reason}
            kind = "text_completion"
        return {
            "id": self.id,
            "object": kind,
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": usage(self.done),
        }

    def _logprobs(self, entries: list[dict], offsets: list[int]) -> dict:
        if self.req.chat:
            return {"content": entries}
        return {
            "tokens": [e["token"] for e in entries],
            "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [
                {c["token"]: c["logprob"] for c in e["top_logprobs"]} for e in entries
            ],
            "text_offset": offsets,
            "content": entries,
        }
