"""A run's records as OpenAI `chat.completion.chunk` objects, so tools that read
OpenAI's streamed logprobs read Logitscope's output unchanged.

Each token becomes one chunk whose `choices[0].logprobs.content[0]` is
`{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}`. `token` is
the token on its own, named the same way for the chosen token and for its
candidates: its text when its bytes are whole UTF-8, else `<0xE3><0x81>` (a
token holding part of a character); `bytes` are always its raw bytes. `delta.
content` is what the token adds to the answer (empty for part of a character,
completed by a later token). Nothing here knows how the records were made.
"""

from __future__ import annotations

import time

from engine.run.records import token_label

# Logitscope's finish reasons in OpenAI's words (a cancelled run stopped early).
FINISH_REASONS = {
    "eos": "stop",
    "stop_string": "stop",
    "stop": "stop",
    "length": "length",
    "cancelled": "stop",
    "error": "error",
}


def _entry(text: str, raw, logprob) -> dict:
    raw = bytes(raw) if raw is not None else text.encode("utf-8")
    return {"token": token_label(raw), "logprob": logprob, "bytes": list(raw)}


def token_logprobs(record) -> dict | None:
    """One `logprobs.content[]` entry of a TokenRecord; None when its logprob
    was not reported (a server that sends text only)."""
    if record.logprob is None:
        return None
    raw = record.bytes
    if raw is None:
        raw = b"" if record.eos else record.text.encode("utf-8")
    entry = _entry(record.text, raw, record.logprob)
    entry["top_logprobs"] = [_entry(c.text, c.bytes, c.logprob) for c in record.top]
    return entry


class ChunkWriter:
    """Turns records into chunks: `chunks(record)` gives the chunks one record
    makes (none for most non-token records)."""

    def __init__(self, run_id: str, model: str = "", created: int | None = None):
        self.id = f"chatcmpl-{run_id}"
        self.model = model
        self.created = int(time.time()) if created is None else created
        self._first = True

    def _chunk(self, choices: list, **extra) -> dict:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            **extra,
        }

    def chunks(self, record) -> list[dict]:
        """The chunks of one record: a token's, the end's (finish reason, then
        usage), an error's; a model record names the model; others give none."""
        if record.type == "model":
            self.model = record.name
            return []
        if record.type == "token":
            delta = {"content": record.text}
            if self._first:
                delta = {"role": "assistant", **delta}
                self._first = False
            entry = token_logprobs(record)
            logprobs = {"content": [entry]} if entry is not None else None
            choice = {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": None}
            return [self._chunk([choice])]
        if record.type == "done":
            reason = FINISH_REASONS.get(record.finish_reason, "stop")
            end = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": reason}
            prompt = record.prompt_tokens or 0
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": record.generated_tokens,
                "total_tokens": prompt + record.generated_tokens,
            }
            return [self._chunk([end]), self._chunk([], usage=usage)]
        if record.type == "error":
            return [{"error": {"message": record.message, "type": record.kind}}]
        return []
