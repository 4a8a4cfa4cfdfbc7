"""Reading a given text on a server: its prompt log-probabilities, where it gives them.

One non-streamed `POST /v1/completions` with `echo: true, logprobs: N,
max_tokens: 1` (the legacy completions API that OpenAI-compatible servers such as
vLLM and llama.cpp's older builds answer with the prompt's own `token_logprobs`,
`top_logprobs` and `text_offset`). The tokens at or after the context's end are
the text's. A token is ranked only where it is among the returned candidates
(rank None otherwise: never invented). A server that answers without the
prompt's log-probabilities (mlx_lm.server, OpenAI's chat-only models, Ollama) is
told apart and named in one sentence.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator

from engine.backends.openai.http import post_json
from engine.errors import ServerError
from engine.reading.read_stats import ReadTally
from engine.reading.request import ReadRequest
from engine.run.records import DoneRecord, PrefillRecord, Record, TokenRecord, TopToken, stand_in_id

CANNOT = "this server cannot return the log-probabilities of a given text"
MAX_TOP = 5  # the legacy API's limit on `logprobs` (vLLM allows 20; 5 works everywhere)


def read_records(
    backend,
    request: ReadRequest,
    should_stop: Callable[[], bool],
    progress: Callable[[int, int], None],
) -> Iterator[Record]:
    """Read `request.text` on the backend's server; see Backend.read.

    Raises:
        ServerError: the server refused, or answered without the prompt's
            log-probabilities (CANNOT, with what it said).
    """
    if isinstance(request.context, list):
        raise ServerError(f"{CANNOT} after a chat conversation: give the context as text")
    context = request.context or ""
    t0 = time.perf_counter()
    body = {
        "model": backend.model,
        "prompt": context + request.text,
        "max_tokens": 1,
        "echo": True,
        "logprobs": min(request.top_n, MAX_TOP),
        "temperature": 0,
    }
    try:
        answer = post_json(
            backend.http, f"{backend.info.base_url}/completions", body, backend.api_key
        )
    except ServerError as e:
        raise ServerError(f"{CANNOT} (it answered: {e})") from None
    entries = _prompt_entries(answer, len(context) + len(request.text))
    if should_stop():
        entries = []
    start = sum(1 for off, *_ in entries if off < len(context))
    yield PrefillRecord(start, start, time.perf_counter() - t0)
    tally, text, t_known = ReadTally(), [], time.perf_counter() - t0
    ours = entries[start:]
    for step, (_off, token, logprob, top) in enumerate(ours):
        record = _record(step, token, logprob, top, t_known, start + step + 1, body["logprobs"])
        tally.add(record)
        text.append(token)
        yield record
    progress(len(ours), len(ours))
    read_s = time.perf_counter() - t0
    yield DoneRecord(
        finish_reason="read",
        text="".join(text),
        prompt_tokens=start,
        generated_tokens=tally.tokens,
        ttft_s=None,
        prefill_tps=None,
        decode_tps=None,
        peak_memory_bytes=None,
        kv_cache_bytes=None,
        context_length=backend.record.context_length if backend.record else None,
        seed=None,
        elapsed_s=read_s,
        timings_from="client",
        reading=tally.summary(
            context_tokens=start,
            start_token="",
            window=None,
            window_keep=None,
            context_length=backend.record.context_length if backend.record else None,
            read_s=read_s,
            text_bytes=len(request.text.encode("utf-8")),
        ),
    )


def _prompt_entries(answer: dict, prompt_chars: int) -> list[tuple[int, str, float | None, dict]]:
    """(text offset, token, log-probability, top {token: logprob}) of each prompt token.

    Raises:
        ServerError: CANNOT, when the answer holds no echoed prompt log-probabilities.
    """
    choices = answer.get("choices") if isinstance(answer, dict) else None
    lp = choices[0].get("logprobs") if choices and isinstance(choices[0], dict) else None
    tokens = lp.get("tokens") if isinstance(lp, dict) else None
    values = lp.get("token_logprobs") if isinstance(lp, dict) else None
    if not isinstance(tokens, list) or not isinstance(values, list) or len(tokens) < 2:
        raise ServerError(f"{CANNOT} (its completions answer echoes no prompt log-probabilities)")
    offsets = lp.get("text_offset")
    if not isinstance(offsets, list) or len(offsets) != len(tokens):
        offsets = list(range(len(tokens)))  # no offsets: everything is the text's
    tops = lp.get("top_logprobs") if isinstance(lp.get("top_logprobs"), list) else []
    out = []
    for i, (off, tok, v) in enumerate(zip(offsets, tokens, values, strict=False)):
        if not isinstance(off, int) or off >= prompt_chars:
            break  # the generated token (max_tokens: 1) and anything after
        top = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        number = v if isinstance(v, int | float) and not isinstance(v, bool) else None
        out.append((off, tok if isinstance(tok, str) else "", number, top))
    return out


def _record(step, token: str, logprob, top: dict, elapsed: float, ctx: int, n: int) -> TokenRecord:
    """A read token as a server describes it: no ids, no entropy, and a rank only
    where the token is among the `n` candidates asked for (a list may add it after)."""
    cands = sorted(
        (
            TopToken(stand_in_id(None, t), t, float(v))
            for t, v in top.items()
            if isinstance(t, str) and isinstance(v, int | float) and not math.isnan(v)
        ),
        key=lambda c: -c.logprob,
    )
    rank = next((i + 1 for i, c in enumerate(cands[:n]) if c.text == token), None)
    raw = tuple(token.encode("utf-8", "surrogatepass"))
    return TokenRecord(
        step=step,
        token_id=-1,
        text=token,
        logprob=logprob,
        prob=math.exp(logprob) if logprob is not None else None,
        sampled_logprob=logprob,
        top=tuple(cands),
        sampled_top=tuple(cands),
        entropy=None,
        sampled_entropy=None,
        elapsed_s=elapsed,
        latency_s=0.0,
        context_tokens=ctx,
        bytes=raw,
        rank=rank,
        read=True,
    )
