"""A request body, checked field by field, turned into a ServeRequest.

Each bad field gives one ApiError (400) naming it, in OpenAI's words where OpenAI
has them. Fields a client sends that change nothing here (`user`, `metadata`…)
are ignored; fields that would change the answer and are not supported (n > 1,
tools, non-zero frequency or presence penalties; on /v1/completions `echo`,
`best_of` other than 1 and a non-empty `suffix`) are refused rather than ignored.
Every check looks at a value's type before using it: a list where text belongs, or
a 400-digit whole number where a float belongs, is a 400, never an exception.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.run.settings import MAX_SEED, MAX_TEMPERATURE, MAX_TOP_N, SamplingSettings
from engine.serve.errors import ApiError

DEFAULT_MAX_TOKENS = 256  # when a request names none (the context bounds it too)
DEFAULT_TEMPERATURE = 1.0  # OpenAI's default
MAX_STOPS = 4
MAX_LOGPROBS = 20  # OpenAI's limit for top_logprobs (more is allowed here, up to MAX_TOP_N)
RECORDED_TOP = 10  # alternatives recorded per step for the journal, whatever is asked
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
UNSUPPORTED = ("tools", "functions", "tool_choice", "response_format", "logit_bias")


@dataclass(frozen=True)
class ServeRequest:
    """One validated request: what to run and how to answer it."""

    chat: bool  # /v1/chat/completions (else /v1/completions)
    model: str | None
    prompt: object  # chat: a list of {role, content}; completions: text
    settings: SamplingSettings
    stream: bool
    logprobs: bool
    top_logprobs: int  # candidates per token in the answer (0: none)
    include_usage: bool  # streamed: a last chunk with usage
    echo_ids: bool = True  # token ids as an extension of each logprobs entry


def _bad(param: str, message: str) -> ApiError:
    return ApiError(400, message, param=param, code="invalid_value")


def _number(body: dict, key: str, default, lo, hi, lo_open=False, hi_open=False):
    v = body.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _bad(key, f"'{key}' must be a finite number, got {json_repr(v)}")
    if isinstance(v, float) and not math.isfinite(v):  # a whole number compares exactly
        raise _bad(key, f"'{key}' must be a finite number, got {json_repr(v)}")
    low_ok = v > lo if lo_open else v >= lo
    high_ok = v < hi if hi_open else v <= hi
    if not (low_ok and high_ok):
        a, b = "(" if lo_open else "[", ")" if hi_open else "]"
        raise _bad(key, f"'{key}' must be in {a}{lo:g}, {hi:g}{b}, got {json_repr(v)}")
    return float(v)  # in range: a whole number this small converts


def _int(body: dict, key: str, default, lo: int, hi: int) -> int | None:
    v = body.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(key, f"'{key}' must be a whole number, got {json_repr(v)}")
    if not lo <= v <= hi:
        raise _bad(key, f"'{key}' must be from {lo} to {hi}, got {json_repr(v)}")
    return v


def _bool(body: dict, key: str, default: bool) -> bool:
    v = body.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise _bad(key, f"'{key}' must be true or false, got {json_repr(v)}")
    return v


def json_repr(v) -> str:
    """A short, safe rendering of a bad value for an error message."""
    try:
        text = repr(v)
    except ValueError:  # a whole number past Python's digit limit for text
        return "a number too long to show"
    return text if len(text) <= 40 else text[:37] + "..."


def _content(m: dict, i: int) -> str:
    c = m.get("content")
    if isinstance(c, list):  # content parts: only text ones, each with its text
        if not all(isinstance(p, dict) and p.get("type") == "text" for p in c):
            raise _bad(f"messages[{i}].content", "only text content parts are supported")
        for j, p in enumerate(c):
            if not isinstance(p.get("text"), str):
                where = f"messages[{i}].content[{j}].text"
                raise _bad(where, f"{where} must be text, got {json_repr(p.get('text'))}")
        c = "".join(p["text"] for p in c)
    if not isinstance(c, str):
        raise _bad(f"messages[{i}].content", f"messages[{i}].content must be text")
    return c


def _messages(body: dict) -> list[dict]:
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise _bad("messages", "'messages' must be a non-empty list of {role, content}")
    out = []
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if not isinstance(role, str) or role not in ROLES:
            raise _bad(
                f"messages[{i}].role",
                f"messages[{i}] must be an object with a role of system, developer, "
                "user or assistant",
            )
        out.append({"role": ROLES[role], "content": _content(m, i)})
    return out


def _prompt(body: dict) -> str:
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1:
        p = p[0]
    if not isinstance(p, str):
        raise _bad("prompt", "'prompt' must be text (one prompt per request)")
    return p


def _stop(body: dict) -> tuple[str, ...]:
    s = body.get("stop")
    if s is None:
        return ()
    stops = [s] if isinstance(s, str) else s
    if not isinstance(stops, list) or not all(isinstance(x, str) and x for x in stops):
        raise _bad("stop", "'stop' must be a non-empty string or a list of them")
    if len(stops) > MAX_STOPS:
        raise _bad("stop", f"'stop' takes at most {MAX_STOPS} sequences, got {len(stops)}")
    return tuple(stops)


def _logprobs(body: dict, chat: bool) -> tuple[bool, int]:
    """(logprobs wanted, top candidates per token)."""
    if chat:
        want = _bool(body, "logprobs", False)
        top = _int(body, "top_logprobs", 0, 0, MAX_TOP_N)
        if top and not want:
            raise _bad("top_logprobs", "'top_logprobs' needs 'logprobs': true")
        return want, top
    top = _int(body, "logprobs", None, 0, MAX_TOP_N)  # completions: a number, or null
    return top is not None, top or 0


def _refuse_completions_only(body: dict) -> None:
    """/v1/completions' own fields that would change the answer: refused, never ignored."""
    if _bool(body, "echo", False):
        raise _bad(
            "echo",
            "'echo' is not supported: this server returns neither the prompt nor its "
            "tokens' log-probabilities, only the completion's",
        )
    if _int(body, "best_of", 1, 1, 1_000_000) != 1:
        raise _bad("best_of", "only best_of=1 is supported: send one request per answer")
    suffix = body.get("suffix")
    if suffix is not None and not isinstance(suffix, str):
        raise _bad("suffix", f"'suffix' must be text, got {json_repr(suffix)}")
    if suffix:
        raise _bad("suffix", "'suffix' is not supported: the answer only continues the prompt")


def _refuse_unsupported(body: dict) -> None:
    n = _int(body, "n", 1, 1, 1_000_000)
    if n != 1:
        raise _bad("n", "only n=1 is supported: send one request per answer")
    for key in ("frequency_penalty", "presence_penalty"):
        if _number(body, key, 0.0, -2.0, 2.0):
            raise _bad(key, f"'{key}' is not supported (use repetition_penalty)")
    for key in UNSUPPORTED:
        if body.get(key) not in (None, [], {}, "none", "auto") and key != "response_format":
            raise _bad(key, f"'{key}' is not supported by this server")
    fmt = body.get("response_format")
    if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
        raise _bad("response_format", "only the 'text' response format is supported")


def parse_request(body, chat: bool) -> ServeRequest:
    """Check a JSON body of /v1/chat/completions (`chat`) or /v1/completions.

    Raises:
        ApiError: 400 naming the first bad field.
    """
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object", code="invalid_json")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise _bad("model", "'model' must be text")
    prompt = _messages(body) if chat else _prompt(body)
    if not chat:
        _refuse_completions_only(body)
    _refuse_unsupported(body)
    max_tokens = _int(body, "max_completion_tokens", None, 1, 10**9)
    max_tokens = _int(body, "max_tokens", max_tokens, 1, 10**9)
    want, top = _logprobs(body, chat)
    opts = body.get("stream_options")
    if opts is not None and not isinstance(opts, dict):
        raise _bad("stream_options", "'stream_options' must be an object")
    settings = SamplingSettings(
        temperature=_number(body, "temperature", DEFAULT_TEMPERATURE, 0, MAX_TEMPERATURE),
        top_p=_number(body, "top_p", 1.0, 0, 1, lo_open=True),
        top_k=_int(body, "top_k", 0, 0, 1_000_000),
        min_p=_number(body, "min_p", 0.0, 0, 1, hi_open=True),
        repetition_penalty=_number(body, "repetition_penalty", 1.0, 0, 10, lo_open=True),
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        seed=_int(body, "seed", None, 0, MAX_SEED),
        stop=_stop(body),
        chat_template=chat,
        top_n=max(top, RECORDED_TOP),
        prompt_cache=True,  # a chat client resending its history prefills only what is new
    )
    return ServeRequest(
        chat=chat,
        model=model,
        prompt=prompt,
        settings=settings,
        stream=_bool(body, "stream", False),
        logprobs=want,
        top_logprobs=top,
        include_usage=_bool(opts or {}, "include_usage", False),
        echo_ids=True,
    )
