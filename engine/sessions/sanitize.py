"""Records brought inside the session schema, so that what was shown is what is kept.

A server can send anything: NaN or huge log-probabilities, ids out of any
vocabulary, a megabyte token, lone surrogates. A record built from that is
still shown, so it must also be recorded: every value outside the range
`session_schema` accepts is replaced here by the nearest value it accepts
(or None, "not reported"), and a token says what was changed in `oddities`.
The journal sanitises what it writes, so no line it writes is rejected on read.

A server can also echo the API key it was sent (in a 401 message, an error event,
a model name): `scrub_record` / `scrub` replace the key by SCRUBBED in every
string of a record or message, so the key never reaches the screen or the journal.
"""

from __future__ import annotations

import dataclasses
import math
import re

from engine.run.records import DoneRecord, ErrorRecord, TokenRecord, TopToken, stand_in_id
from engine.sessions.session_schema import MAX_TEXT, TOKEN_ID

LOGPROB_RANGE = (-1e9, 0.0)
ROUNDING = 1e-3  # a log-probability this far above 0 is p = 1 rounded (the schema's limit)
MAX_BYTES = 64  # a token's raw bytes kept (the schema's limit); longer: text only
MAX_CANDIDATES = 1000  # of a top list, and of a list of numbers
MAX_ODDITIES = 16
SCRUBBED = "***"  # what an API key echoed by a server is replaced with
MIN_SECRET = 4  # shorter keys are not scrubbed: they would blank ordinary words, guarding nothing
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> tuple[str, list[str]]:
    """Text safe to print and store: lone surrogates replaced, at most MAX_TEXT characters.

    Args:
        text: any text.

    Returns:
        The text, and what was changed (empty when nothing was).
    """
    notes = []
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
        notes.append("invalid characters (lone surrogates) replaced by \ufffd")
    if len(text) > MAX_TEXT:
        notes.append(f"text of {len(text)} characters cut to {MAX_TEXT}")
        text = text[:MAX_TEXT]
    return text, notes


def clean_logprob(v, what: str, notes: list[str]) -> float | None:
    """A log-probability brought into LOGPROB_RANGE.

    A value just above 0 (up to ROUNDING) is a rounded certain token and becomes 0
    silently; others out of range are clamped and noted.

    Args:
        v: a log-probability, or None.
        what: how a note names the value.
        notes: changes are appended here.

    Returns:
        The value, clamped; None for None or NaN.
    """
    if v is None:
        return None
    if math.isnan(v):
        notes.append(f"{what} was NaN: not reported")
        return None
    lo, hi = LOGPROB_RANGE
    if hi < v <= ROUNDING:
        return hi  # a rounding error of a certain token, not an oddity
    if not lo <= v <= hi:
        notes.append(f"{what} {v:g} out of range: clamped")
        return min(max(v, lo), hi)
    return v


def _number(v, lo: float, hi: float, what: str, notes: list[str]) -> float | None:
    if v is None:
        return None
    if not math.isfinite(v) or not lo <= v <= hi:
        notes.append(f"{what} {v:g} out of range: not reported")
        return None
    return v


def _token_id(tid: int, raw, text: str, what: str, notes: list[str]) -> int:
    if TOKEN_ID[0] <= tid <= TOKEN_ID[1]:
        return tid
    notes.append(f"{what} {tid} out of range: a stand-in id is used")
    return stand_in_id(raw, text)


def _raw(raw, what: str, notes: list[str]):
    if raw is None or len(raw) <= MAX_BYTES:
        return raw
    notes.append(f"{what} of {len(raw)} bytes: its bytes are not kept, its text is")
    return None


def clean_top(top, notes: list[str]) -> tuple[TopToken, ...]:
    """Candidates inside the schema's ranges.

    At most MAX_CANDIDATES are kept; those without a log-probability are left
    out; out-of-range ids get a stand-in id; overlong bytes are dropped.

    Args:
        top: TopToken candidates.
        notes: each kind of change is appended here once.

    Returns:
        The cleaned candidates.
    """
    if len(top) > MAX_CANDIDATES:
        notes.append(f"{len(top)} candidates: the first {MAX_CANDIDATES} kept")
        top = top[:MAX_CANDIDATES]
    out, local = [], []
    for c in top:
        if c.logprob is None or math.isnan(c.logprob):
            local.append("candidates without a log-probability left out")
            continue  # a candidate without a probability says nothing
        lp = clean_logprob(c.logprob, "a candidate's log-probability", local)
        text, changed = clean_text(c.text)
        local += changed
        raw = _raw(c.bytes, "a candidate", local)
        tid = _token_id(c.token_id, c.bytes, c.text, "a candidate id", local)
        out.append(TopToken(tid, text, lp, raw))
    notes += dict.fromkeys(local)  # each kind of change once
    return tuple(out)


def _floats(values: tuple, lo: float, hi: float, what: str, notes: list[str]) -> tuple:
    if len(values) <= MAX_CANDIDATES and all(math.isfinite(v) and lo <= v <= hi for v in values):
        return values
    notes.append(f"{what} out of range: not reported")
    return ()


def sanitize_token(t: TokenRecord) -> TokenRecord:
    """The token with every value inside the schema's ranges; changes in `oddities`.

    Args:
        t: a token record as received.

    Returns:
        The same object when nothing needed changing (the usual case), else a copy
        whose `oddities` (at most MAX_ODDITIES) say what was changed.
    """
    notes: list[str] = []
    text, changed = clean_text(t.text)
    notes += changed
    raw = _raw(t.bytes, "the token", notes)
    p_hi = 1.0 + 1e-6
    new = dict(
        text=text,
        token_id=_token_id(t.token_id, t.bytes, t.text, "the token id", notes),
        logprob=clean_logprob(t.logprob, "the log-probability", notes),
        prob=_number(t.prob, 0.0, p_hi, "the probability", notes),
        sampled_logprob=clean_logprob(t.sampled_logprob, "the sampled log-probability", notes),
        top=clean_top(t.top, notes),
        sampled_top=clean_top(t.sampled_top, notes),
        entropy=_number(t.entropy, 0.0, 1e6, "the entropy", notes),
        sampled_entropy=_number(t.sampled_entropy, 0.0, 1e6, "the sampled entropy", notes),
        elapsed_s=min(max(t.elapsed_s, 0.0), 1e9) if math.isfinite(t.elapsed_s) else 0.0,
        latency_s=min(max(t.latency_s, 0.0), 1e9) if math.isfinite(t.latency_s) else 0.0,
        context_tokens=min(max(t.context_tokens, 0), 10**12),
        sweep_logz=_floats(t.sweep_logz, -1e9, 1e9, "the temperature sweep", notes),
        sweep_entropy=_floats(t.sweep_entropy, 0.0, 1e6, "the temperature sweep", notes),
        sampled_probs=_floats(t.sampled_probs, 0.0, p_hi, "the sampled probabilities", notes),
        bytes=raw,
    )
    if not notes and all(getattr(t, k) == v for k, v in new.items()):
        return t
    oddities = tuple(dict.fromkeys((*t.oddities, *notes)))[:MAX_ODDITIES]
    return dataclasses.replace(t, **new, oddities=tuple(clean_text(o)[0] for o in oddities))


def sanitize_done(d: DoneRecord) -> DoneRecord:
    """The end record with its text valid and its statistics in range.

    Args:
        d: a done record as received.

    Returns:
        The same object when nothing needed changing, else a copy: text and error
        cleaned, rates and times out of range set to None (not reported).
    """
    notes: list[str] = []
    text, _ = clean_text(d.text)
    error = clean_text(d.error)[0] if d.error is not None else None
    rates = {k: _number(getattr(d, k), 0.0, 1e12, k, notes) for k in ("prefill_tps", "decode_tps")}
    spans = {
        k: _number(getattr(d, k), 0.0, 1e9, k, notes) for k in ("ttft_s", "prefill_s", "decode_s")
    }
    if not notes and text == d.text and error == d.error:
        return d
    return dataclasses.replace(d, text=text, error=error, **rates, **spans)


def sanitize(record):
    """Any record, with what a server could have made invalid brought into range.

    Args:
        record: any engine record.

    Returns:
        Token and done records sanitised, an error record's message cleaned of
        lone surrogates; other records as they are.
    """
    if isinstance(record, TokenRecord):
        return sanitize_token(record)
    if isinstance(record, DoneRecord):
        return sanitize_done(record)
    if isinstance(record, ErrorRecord) and _SURROGATE.search(record.message):
        return dataclasses.replace(record, message=clean_text(record.message)[0])
    return record


def oddities_summary(tokens) -> str | None:
    """One line for a report: how many steps held odd values and what was done.

    Args:
        tokens: a run's token records.

    Returns:
        The line (the first four kinds of change named), or None when no step had
        any.
    """
    odd = [t for t in tokens if t.oddities]
    if not odd:
        return None
    notes = list(dict.fromkeys(n for t in odd for n in t.oddities))
    more = f"; and {len(notes) - 4} more" if len(notes) > 4 else ""
    return f"{len(odd)} step(s) made valid: " + "; ".join(notes[:4]) + more


def scrub(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` (an API key) replaced by SCRUBBED.

    Args:
        text: a message or any text a server sent.
        secret: the API key, or None (nothing to scrub).

    Returns:
        The text, unchanged when it does not hold the key.
    """
    if not secret or len(secret) < MIN_SECRET or secret not in text:
        return text
    return text.replace(secret, SCRUBBED)


def scrub_record(value, secret: str | None):
    """A record (or any value inside one) with the API key scrubbed from every string.

    Walks dataclasses, tuples, lists and dicts. A dataclass whose text changed loses
    its raw `bytes` too (they would spell the key again).

    Args:
        value: an engine record, or a value inside one.
        secret: the API key, or None.

    Returns:
        The same object when it holds no copy of the key (the usual case), else a copy.
    """
    if not secret or len(secret) < MIN_SECRET:
        return value
    if isinstance(value, str):
        return scrub(value, secret)
    if isinstance(value, tuple | list):
        items = [scrub_record(v, secret) for v in value]
        same = all(a is b for a, b in zip(items, value, strict=True))
        return value if same else type(value)(items)
    if isinstance(value, dict):
        new = {k: scrub_record(v, secret) for k, v in value.items()}
        return value if all(new[k] is value[k] for k in value) else new
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f.name for f in dataclasses.fields(value)]
        changed = {}
        for name in fields:
            old = getattr(value, name)
            new = scrub_record(old, secret)
            if new is not old:
                changed[name] = new
        if not changed:
            return value
        if "bytes" in fields and getattr(value, "bytes", None) is not None:
            changed["bytes"] = None
        return dataclasses.replace(value, **changed)
    return value
