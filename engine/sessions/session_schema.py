"""The one schema of session data: what a journal line, a run and a record may hold.

The journal reader, the importer and the exporters all go through here, so data
from a file (a crafted export, a damaged journal) is checked field by field
before anything uses it: every field has a type and a range, unknown fields are
dropped, and a value that does not fit rejects the record (SchemaError says
which field and why). Ids that become file names are validated strictly.
"""

from __future__ import annotations

import math
import re
from dataclasses import MISSING, asdict, fields

from engine.run.records import (
    DoneRecord,
    ErrorRecord,
    ModelRecord,
    PrefillRecord,
    ProgressRecord,
    TokenRecord,
)

SCHEMA = "logitscope.session"  # the JSON export's "schema" field
SCHEMA_VERSION = 1
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_TEXT = 10_000_000  # characters in one string field
FINISH_REASONS = ("stop", "eos", "stop_string", "length", "cancelled", "error", "read")
ERROR_KINDS = ("error", "model", "settings", "engine_died", "engine_hung", "server")
BACKENDS = ("mlx", "openai")
# Vocabulary ids, or a server's stand-in ids (negative, from the token's bytes; -1 unknown)
TOKEN_ID = (-(2**31) - 1, 2**40)


class SchemaError(ValueError):
    """A value that does not fit the session schema."""


def is_session_id(value) -> bool:
    """Whether a value is a session id safe as a file name.

    Args:
        value: anything.

    Returns:
        True for a string of 1..64 letters, digits, `_ . -` (not starting with
        one of those three) with no `..`.
    """
    return isinstance(value, str) and bool(SESSION_ID.fullmatch(value)) and ".." not in value


def run_number(run_id, session_id: str) -> int | None:
    """The N of a run id `SESSION/N` belonging to `session_id`.

    Args:
        run_id: anything.
        session_id: the session it should belong to.

    Returns:
        N (at most 9 digits), or None for another session's id or not a run id.
    """
    if not isinstance(run_id, str):
        return None
    sid, _, n = run_id.rpartition("/")
    if sid != session_id or not n.isdigit() or len(n) > 9:
        return None
    return int(n)


# -- field checkers ------------------------------------------------------------------
def _num(v, lo=-math.inf, hi=math.inf, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SchemaError(f"expected a number, got {type(v).__name__}")
    try:
        v = float(v)
    except OverflowError:  # a whole number of hundreds of digits
        raise SchemaError("a number too large to be one") from None
    if not math.isfinite(v) or not lo <= v <= hi:
        raise SchemaError(f"{v} is out of range [{lo}, {hi}]")
    return v


def _int(v, lo=0, hi=2**63 - 1, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise SchemaError(f"expected a whole number, got {type(v).__name__}")
    if not lo <= v <= hi:
        shown = v if abs(v) < 10**30 else f"a {v.bit_length()}-bit number"
        raise SchemaError(f"{shown} is out of range [{lo}, {hi}]")
    return v


def _str(v, allow_none=False, choices=None):
    if v is None and allow_none:
        return None
    if not isinstance(v, str) or len(v) > MAX_TEXT:
        raise SchemaError(f"expected text, got {type(v).__name__}")
    if choices is not None and v not in choices:
        raise SchemaError(f"'{v[:40]}' is not one of {', '.join(choices)}")
    return v


def _bool(v):
    if not isinstance(v, bool):
        raise SchemaError(f"expected true or false, got {type(v).__name__}")
    return v


def _bytes_list(v):
    if v is None:
        return None
    if not isinstance(v, list) or len(v) > 64:
        raise SchemaError("bytes must be a short list of numbers 0-255")
    return tuple(_int(b, 0, 255) for b in v)


def _logprob(v):
    return _num(v, -1e9, 1e-3)


def _top_list(v):
    if not isinstance(v, list | tuple) or len(v) > 1000:
        raise SchemaError("expected a list of candidates")
    from engine.run.records import TopToken

    out = []
    for c in v:
        if isinstance(c, TopToken):
            c = asdict(c)
        if not isinstance(c, dict):
            raise SchemaError("a candidate must be an object")
        raw = _bytes_list(c.get("bytes"))
        out.append(
            {
                "token_id": _int(c.get("token_id"), *TOKEN_ID),
                "text": _str(c.get("text")),
                "logprob": _logprob(c.get("logprob")),
                "bytes": list(raw) if raw is not None else None,
            }
        )
    return out


def _floats(v, lo=-math.inf, hi=math.inf):
    if not isinstance(v, list | tuple) or len(v) > 1000:
        raise SchemaError("expected a list of numbers")
    return tuple(_num(x, lo, hi) for x in v)


def _notes(v):
    if not isinstance(v, list | tuple) or len(v) > 64:
        raise SchemaError("expected a short list of notes")
    return tuple(_str(x) for x in v)


def _opt_logprob(v):
    return None if v is None else _logprob(v)


def _capabilities(v):
    from engine.run.records import CAPABILITIES

    if not isinstance(v, list | tuple) or len(v) > 64:
        raise SchemaError("capabilities must be a list of names")
    return tuple(c for c in v if isinstance(c, str) and c in CAPABILITIES)


_P = dict(lo=0.0, hi=1.0 + 1e-6)
_SECONDS = dict(lo=0.0, hi=1e9)
_COUNT = dict(lo=0, hi=10**12)
CHECKS = {
    ProgressRecord: {"message": _str, "fraction": lambda v: _num(v, 0.0, 1.0)},
    ModelRecord: {
        "name": _str,
        "path": _str,
        "architecture": _str,
        "quantization": _str,
        "size_bytes": lambda v: _int(v, allow_none=True, **_COUNT),
        "context_length": lambda v: _int(v, 0, 10**9, allow_none=True),
        "device": _str,
        "load_s": lambda v: _num(v, **_SECONDS),
        "backend": lambda v: _str(v, choices=BACKENDS),
        "capabilities": _capabilities,
        "compute": _str,
        "weight_bytes": lambda v: _int(v, allow_none=True, **_COUNT),
        "parameters": lambda v: _int(v, allow_none=True, **_COUNT),
        "memory_gbs": lambda v: _num(v, 0.0, 1e6, allow_none=True),
        "matmul_gflops": lambda v: _num(v, 0.0, 1e9, allow_none=True),
        "limits_source": _str,
    },
    PrefillRecord: {
        "processed": lambda v: _int(v, **_COUNT),
        "total": lambda v: _int(v, **_COUNT),
        "elapsed_s": lambda v: _num(v, **_SECONDS),
        "system_tokens": lambda v: _int(v, **_COUNT),
        "cached_tokens": lambda v: _int(v, **_COUNT),
    },
    TokenRecord: {
        "step": lambda v: _int(v, **_COUNT),
        "token_id": lambda v: _int(v, *TOKEN_ID),
        "text": _str,
        "logprob": _opt_logprob,
        "prob": lambda v: _num(v, allow_none=True, **_P),
        "sampled_logprob": _opt_logprob,
        "top": _top_list,
        "sampled_top": _top_list,
        "entropy": lambda v: _num(v, 0.0, 1e6, allow_none=True),
        "sampled_entropy": lambda v: _num(v, 0.0, 1e6, allow_none=True),
        "elapsed_s": lambda v: _num(v, **_SECONDS),
        "latency_s": lambda v: _num(v, **_SECONDS),
        "context_tokens": lambda v: _int(v, **_COUNT),
        "sweep_logz": lambda v: _floats(v, -1e9, 1e9),
        "sweep_entropy": lambda v: _floats(v, 0.0, 1e6),
        "bytes": _bytes_list,
        "eos": _bool,
        "sampled_probs": lambda v: _floats(v, **_P),
        "thinking": _bool,
        "oddities": _notes,
        "forced": _bool,
        "rank": lambda v: _int(v, 1, 10**9, allow_none=True),
        "read": _bool,
    },
    DoneRecord: {
        "finish_reason": lambda v: _str(v, choices=FINISH_REASONS),
        "text": _str,
        "prompt_tokens": lambda v: _int(v, allow_none=True, **_COUNT),
        "generated_tokens": lambda v: _int(v, **_COUNT),
        "ttft_s": lambda v: _num(v, allow_none=True, **_SECONDS),
        "prefill_tps": lambda v: _num(v, 0.0, 1e12, allow_none=True),
        "decode_tps": lambda v: _num(v, 0.0, 1e12, allow_none=True),
        "peak_memory_bytes": lambda v: _int(v, allow_none=True, **_COUNT),
        "kv_cache_bytes": lambda v: _int(v, allow_none=True, **_COUNT),
        "context_length": lambda v: _int(v, allow_none=True, **_COUNT),
        "seed": lambda v: _int(v, allow_none=True),
        "elapsed_s": lambda v: _num(v, **_SECONDS),
        "system_tokens": lambda v: _int(v, **_COUNT),
        "cached_tokens": lambda v: _int(v, **_COUNT),
        "thinking_tokens": lambda v: _int(v, **_COUNT),
        "kv_cache_tokens": lambda v: _int(v, allow_none=True, **_COUNT),
        "branch_step": lambda v: _int(v, allow_none=True, **_COUNT),
        "prefill_s": lambda v: _num(v, allow_none=True, **_SECONDS),
        "decode_s": lambda v: _num(v, allow_none=True, **_SECONDS),
        "error": lambda v: _str(v, allow_none=True),
        "timings_from": lambda v: _str(v, choices=("engine", "server", "client")),
        "energy_j": lambda v: _num(v, 0.0, 1e12, allow_none=True),
        "energy_source": lambda v: _str(v, allow_none=True),
        "cost": lambda v: _num(v, 0.0, 1e12, allow_none=True),
        "cost_currency": lambda v: _str(v, allow_none=True),
    },
    ErrorRecord: {"message": _str, "kind": lambda v: _str(v, choices=ERROR_KINDS)},
}
CLASSES = {c.__dataclass_fields__["type"].default: c for c in CHECKS}


def clean_record(d) -> dict:
    """A record dict checked field by field: known fields only, each in range.

    Args:
        d: a record dict from a file (or `to_dict` of a record).

    Returns:
        A new dict: its type, then every field present (None where the field's
        default is None is left out); tuples as lists.

    Raises:
        SchemaError: not a record, an unknown type, a missing or bad field.
    """
    if not isinstance(d, dict):
        raise SchemaError("a record must be an object")
    kind = d.get("type")
    cls = CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        shown = kind[:40] if isinstance(kind, str) else type(kind).__name__
        raise SchemaError(f"unknown record type {shown!r}")
    out = {"type": d["type"]}
    for f in fields(cls):
        if f.name == "type":
            continue
        check = CHECKS[cls].get(f.name)
        if f.name not in d or (d[f.name] is None and f.default is None):
            if f.default is MISSING and f.default_factory is MISSING:
                raise SchemaError(f"{d['type']} record lacks '{f.name}'")
            continue
        try:
            value = check(d[f.name]) if check else d[f.name]
        except SchemaError as e:
            raise SchemaError(f"{d['type']} record field '{f.name}': {e}") from None
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def clean_settings(d) -> dict:
    """Sampling settings from a file: every known key validated, unknown ones dropped.

    Args:
        d: the settings dict.

    Returns:
        The settings' full `to_dict()` (missing keys get their defaults).

    Raises:
        SchemaError: not an object, or a value out of its range.
    """
    from engine.errors import SettingsError
    from engine.run.settings import SamplingSettings

    if not isinstance(d, dict):
        raise SchemaError("settings must be an object")
    try:
        stop = d.get("stop", [])
        if not isinstance(stop, list | tuple) or not all(isinstance(s, str) for s in stop):
            raise SchemaError("stop must be a list of text")
        for key in ("system_prompt",):
            _str(d.get(key), allow_none=True)
        if "chat_template" in d and not isinstance(d["chat_template"], bool):
            raise SchemaError("chat_template must be true or false")
        settings = SamplingSettings.from_dict(d).validate()
    except OverflowError:  # a whole number of hundreds of digits
        raise SchemaError("settings: a number too large to be one") from None
    except (SettingsError, TypeError, ValueError) as e:
        raise SchemaError(f"settings: {str(e)[:200]}") from None
    return settings.to_dict()
