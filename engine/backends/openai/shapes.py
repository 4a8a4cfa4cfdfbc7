"""Per-token log-probabilities from the response shapes real servers send.

- OpenAI / vLLM / Ollama chat: `choices[].logprobs.content[]` entries
  `{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}` (no ids).
- llama.cpp: the same with `id`, or with `post_sampling_probs: true`
  `{token, prob, bytes, top_probs: [{id, token, prob, bytes}]}`: probabilities
  of the distribution the token was drawn from.
- mlx_lm.server (non-streamed only): `{id, token, logprob, top_logprobs}` where
  `token` is a raw vocabulary string (`Ġthe`) and the outer entry is the first
  of an unsorted top list, not the generated token: `align_mlx_lm` repairs it.

Nothing is invented: a field a server leaves out stays None. Where a server
gives no token id, a stand-in is derived from the token's bytes (negative, so it
can never be mistaken for a vocabulary id), keeping "same token" comparisons
right.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from engine.errors import ServerError
from engine.models.token_bytes import bytes_table
from engine.run.records import SWEEP_TEMPERATURES, TopToken, stand_in_id, token_label

MAX_VOCAB_ID = 2**40  # a larger id is no vocabulary's (the session schema's limit)


@dataclass
class TokenInfo:
    """One generated token as a server described it."""

    text: str  # the token as text (what it adds to the answer, when no bytes are given)
    raw: bytes | None = None
    token_id: int | None = None
    logprob: float | None = None  # of the chosen token, in the distribution below
    top: list[TopToken] = field(default_factory=list)  # sorted, most likely first
    post_sampling: bool = False  # the values are the sampled-from distribution
    oddities: list[str] = field(default_factory=list)  # what was malformed, and left out


def _number(v) -> float | None:
    """A number as sent (NaN and infinities too: the record boundary flags them)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def _raw(entry: dict) -> bytes | None:
    b = entry.get("bytes")
    if isinstance(b, list) and all(isinstance(x, int) and 0 <= x < 256 for x in b):
        return bytes(b)
    return None


def _logprob_of(entry: dict, notes: list[str]) -> tuple[float | None, bool]:
    """(log-probability, post_sampling) of a candidate or chosen entry."""
    for key, post in (("logprob", False), ("prob", True)):
        if entry.get(key) is None:
            continue
        v = _number(entry[key])
        if v is None:
            notes.append(f"a malformed {key} ({str(entry[key])[:40]!r}) left out")
            return None, post
        if post:
            return (math.log(v) if v > 0 else -math.inf if v == 0 else math.nan), True
        return v, False
    return None, False


def _int_id(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _candidate(c, notes: list[str]) -> TopToken | None:
    if not isinstance(c, dict):
        notes.append("malformed top candidates left out")
        return None
    text = c.get("token") if isinstance(c.get("token"), str) else ""
    raw = _raw(c)
    lp, _ = _logprob_of(c, notes)
    if lp is None:
        notes.append("top candidates without a probability left out")
        return None
    tid = _int_id(c.get("id"))
    if tid is None or not 0 <= tid <= MAX_VOCAB_ID:
        if tid is not None:
            notes.append("top candidate ids out of range: stand-in ids used")
        tid = stand_in_id(raw, text)
    return TopToken(tid, token_label(raw, text), lp, tuple(raw) if raw else None)


def parse_entry(entry) -> TokenInfo:
    """One `logprobs.content[]` entry (OpenAI, vLLM, llama.cpp shapes); what is
    malformed in it is left out and noted in `oddities`, never fatal."""
    if not isinstance(entry, dict):
        return TokenInfo("", oddities=["a malformed logprobs entry: only its text is kept"])
    notes: list[str] = []
    text = entry.get("token") if isinstance(entry.get("token"), str) else ""
    raw = _raw(entry)
    lp, post = _logprob_of(entry, notes)
    tops = entry.get("top_probs") if "top_probs" in entry else entry.get("top_logprobs")
    if tops is not None and not isinstance(tops, list):
        notes.append("top candidates not a list: left out")
    cands = [_candidate(c, notes) for c in tops] if isinstance(tops, list) else []
    top = [c for c in cands if c is not None]
    top.sort(key=lambda c: -c.logprob if c.logprob == c.logprob else math.inf)  # NaN last
    tid = _int_id(entry.get("id"))
    return TokenInfo(
        text, raw, tid, lp, top, post or "top_probs" in entry, list(dict.fromkeys(notes))
    )


def chunk_entries(chunk: dict) -> tuple[str, list, str | None]:
    """(content text, logprob entries, finish_reason) of one chat or completion chunk."""
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        raise ServerError("the server sent a chunk without 'choices'")
    if not choices:
        return "", [], None  # e.g. the usage chunk at the end
    c = choices[0]
    if not isinstance(c, dict):
        raise ServerError("the server sent a malformed choice")
    part = c.get("delta") or c.get("message") or {}
    text = part.get("content") if isinstance(part, dict) else None
    if text is None:
        text = c.get("text") if isinstance(c.get("text"), str) else ""
    if not isinstance(text, str):
        raise ServerError("the server sent non-text content")
    lp = c.get("logprobs")
    entries = lp.get("content") if isinstance(lp, dict) else None
    if entries is None and isinstance(lp, dict) and isinstance(lp.get("tokens"), list):
        entries = _legacy_entries(lp)  # /v1/completions: parallel lists
    reason = c.get("finish_reason")
    reason = reason if isinstance(reason, str) and reason else None  # anything else: none
    return text, entries if isinstance(entries, list) else [], reason


REASONING_FIELDS = (
    "reasoning_content",
    "reasoning",
    "thinking",
)  # DeepSeek/vLLM, OpenRouter/Ollama


def chunk_reasoning(chunk: dict) -> str:
    """The thinking text of one chat chunk (servers send it apart from `content`)."""
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    part = choices[0].get("delta") or choices[0].get("message") or {}
    for key in REASONING_FIELDS:
        value = part.get(key) if isinstance(part, dict) else None
        if isinstance(value, str) and value:
            return value
    return ""


def _legacy_entries(lp: dict) -> list[dict]:
    """The legacy completions shape ({tokens, token_logprobs, top_logprobs: [{text: lp}]})
    as `content[]` entries."""
    tokens, lps = lp.get("tokens") or [], lp.get("token_logprobs") or []
    tops = lp.get("top_logprobs") or []
    out = []
    for i, tok in enumerate(tokens):
        top = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        cands = [{"token": t, "logprob": v} for t, v in top.items()]
        out.append(
            {"token": tok, "logprob": lps[i] if i < len(lps) else None, "top_logprobs": cands}
        )
    return out


def entropy_top_k(top: list[TopToken]) -> float | None:
    """Entropy (nats) of the returned candidates, renormalised: a lower bound's
    stand-in, labelled 'over the top-k' wherever it is shown."""
    if not top:
        return None
    m = max(c.logprob for c in top)
    w = [math.exp(c.logprob - m) for c in top]
    z = sum(w)
    return max(-sum(x / z * math.log(x / z) for x in w if x > 0), 0.0)


def sweep_top_k(top: list[TopToken]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """logsumexp(lp/T) and entropy at each sweep temperature, over the top-k only."""
    if not top:
        return (), ()
    lps = [c.logprob for c in top]
    logz, ent = [], []
    for t in SWEEP_TEMPERATURES:
        s = [lp / t for lp in lps]
        m = max(s)
        z = math.log(sum(math.exp(x - m) for x in s)) + m
        p = [math.exp(x - z) for x in s]
        logz.append(z)
        ent.append(max(-sum(q * math.log(q) for q in p if q > 0), 0.0))
    return tuple(logz), tuple(ent)


def align_mlx_lm(
    content: list, answer: str, eos_stop: bool, greedy: bool
) -> list[TokenInfo] | None:
    """mlx_lm.server's non-streamed logprobs, with the generated token found.

    Its outer entry is the first of an unsorted top list, not the token it
    generated, and `token` is a raw vocabulary string. The generated token is
    the candidate whose bytes continue the answer; where several do (" Par",
    " Paris"), the most likely is tried first and the search backs up if the
    rest of the answer cannot be placed. A step whose token is not among the
    candidates cannot be placed: then None is returned (nothing is guessed).
    """
    if not isinstance(content, list) or not content:
        return None
    raw_steps = [parse_entry(e).top for e in content]
    strings = [c.text for top in raw_steps for c in top]
    table = dict(zip(strings, bytes_table(strings), strict=True))
    steps = [
        [
            TopToken(c.token_id, token_label(table[c.text]), c.logprob, tuple(table[c.text]))
            for c in top
        ]
        for top in raw_steps
    ]
    target = answer.encode("utf-8")
    n = len(steps)
    if eos_stop:
        n -= 1  # the last step is the end-of-sequence token: nothing of it is in the text
    choice, pos, i, budget = [0] * n, [0] * (n + 1), 0, 100_000
    while 0 <= i < n:
        budget -= 1
        if budget < 0:  # pathological ambiguity: give up rather than guess or hang
            return None
        fits = [c for c in steps[i] if c.bytes and target.startswith(bytes(c.bytes), pos[i])]
        if choice[i] < len(fits) and (
            i < n - 1 or pos[i] + len(fits[choice[i]].bytes) == len(target)
        ):
            pos[i + 1] = pos[i] + len(fits[choice[i]].bytes)
            i += 1
        else:
            choice[i] = 0
            i -= 1
            if i >= 0:
                choice[i] += 1
    if i < 0 or pos[n] != len(target):
        return None
    out = []
    for k in range(n):
        fits = [c for c in steps[k] if c.bytes and target.startswith(bytes(c.bytes), pos[k])]
        c = fits[choice[k]]
        out.append(TokenInfo(c.text, bytes(c.bytes), c.token_id, c.logprob, steps[k]))
    if eos_stop:  # which end token was drawn is known only when the run was greedy
        c = steps[-1][0] if greedy and steps[-1] else None
        out.append(
            TokenInfo("", None, c.token_id if c else None, c.logprob if c else None, steps[-1])
        )
    return out


def zip_mlx_lm(
    ids_content: list, top_content: list, pieces: list[str], eos_stop: bool
) -> list[TokenInfo] | None:
    """mlx_lm.server's tokens from two non-streamed passes: `logprobs` alone gives
    each generated token's id and log-probability (right), `top_logprobs` the
    candidates; the text of each token is the streamed chunk of the same step
    (mlx_lm.server sends one chunk per token that adds text). None when the
    counts do not line up, so nothing is guessed."""
    n_text = len(ids_content) - (1 if eos_stop else 0)
    if not isinstance(top_content, list) or len(top_content) != len(ids_content):
        return None
    if n_text != len(pieces) or n_text < 0:
        return None
    out = []
    for k, entry in enumerate(ids_content):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
            return None
        raw_top = parse_entry(top_content[k]).top
        table = bytes_table([c.text for c in raw_top])
        top = [
            TopToken(c.token_id, token_label(b), c.logprob, tuple(b))
            for c, b in zip(raw_top, table, strict=True)
        ]
        lp, _ = _logprob_of(entry, [])
        text = pieces[k] if k < n_text else ""
        raw = text.encode("utf-8") if k < n_text else None
        out.append(TokenInfo(text, raw, entry["id"], lp, top))
    return out
