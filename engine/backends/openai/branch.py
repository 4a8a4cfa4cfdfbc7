"""Branching on a server: continue a raw-completion answer from a step.

A server reports the tokens it chose, not its KV cache or (usually) its token ids,
but any raw `/v1/completions` endpoint continues from given text: the prompt, the
answer's first K tokens as text and, for "continue with ' X'", that token's text.
The server's records are renumbered to follow the shared prefix (steps from K, or
K + 1 after a forced token); the forced token's record is the parent's step K with
that token chosen (`forced: true`; its probability is the parent's, where the
server listed it among that step's candidates). A chat answer cannot be continued
this way: the server applies its own chat template to whole messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace

from engine.errors import SettingsError
from engine.run.continuation import Continuation
from engine.run.records import Record, TokenRecord, TopToken, stand_in_id

CHAT_REFUSAL = (
    "a server's chat answer cannot be continued from a step (the server applies its own "
    "chat template to whole messages): run the prompt in raw completion mode to branch it, "
    "or use a local model"
)


def _text_of(t: TopToken) -> str:
    return bytes(t.bytes).decode("utf-8", "replace") if t.bytes else t.text


def forced_record(cont: Continuation) -> TokenRecord:
    """Step K with the person's token: the parent's distribution there, that token chosen."""
    at = cont.at_step or {}
    top = tuple(TopToken(**t) if isinstance(t, dict) else t for t in at.get("top", ()))
    stop = tuple(TopToken(**t) if isinstance(t, dict) else t for t in at.get("sampled_top", ()))
    text = cont.forced_text or ""
    raw = text.encode("utf-8")
    match = next((t for t in top if _text_of(t) == text), None)
    lp = match.logprob if match is not None else None
    return TokenRecord(
        step=cont.step,
        token_id=match.token_id if match is not None else stand_in_id(raw, text),
        text=text,
        logprob=lp,
        prob=math.exp(lp) if lp is not None else None,
        sampled_logprob=None,
        top=top,
        sampled_top=stop,
        entropy=at.get("entropy"),
        sampled_entropy=at.get("sampled_entropy"),
        elapsed_s=0.0,
        latency_s=0.0,
        context_tokens=int(at.get("context_tokens") or 0),
        bytes=tuple(raw),
        sampled_probs=tuple(at.get("sampled_probs", ())),
        forced=True,
    )


def continue_on_server(
    generate: Callable[..., Iterator[Record]],
    prompt,
    settings,
    should_stop: Callable[[], bool],
    cont: Continuation,
) -> Iterator[Record]:
    """Run `generate` (the server backend's own) on prompt + prefix text + forced text
    and renumber its records as a branch of the answer (see the module docstring).

    Raises:
        SettingsError: a chat run, or a conversation.
    """
    if settings.chat_template or not isinstance(prompt, str):
        raise SettingsError(CHAT_REFUSAL)
    forced = cont.forced_text
    offset = cont.step + (1 if forced is not None else 0)
    head = cont.prefix_text + (forced or "")
    pending = forced_record(cont) if forced is not None else None
    for r in generate(prompt + head, settings, should_stop):
        if pending is not None and r.type in ("token", "done"):
            yield pending
            pending = None
        if r.type == "token":
            yield replace(r, step=r.step + offset)
        elif r.type == "done":
            n = r.prompt_tokens
            yield replace(
                r,
                text=head + r.text,
                generated_tokens=r.generated_tokens + offset,
                # the server counted the prefix as prompt: its own split of the same text
                prompt_tokens=max(n - offset, 0) if n is not None else None,
                branch_step=cont.step,
            )
        elif r.type == "prefill":
            yield replace(r, total=max(r.total - offset, 0) + cont.step)
        else:
            yield r
