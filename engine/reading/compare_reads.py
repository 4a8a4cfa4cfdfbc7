"""Two reads compared: where two models (or one model on two texts) disagree.

Plain Python, no MLX, no Qt: it takes the token records of two reads and the texts
they read, and returns a `ReadComparison` of plain values. Which comparison applies
is decided from the records alone (so it works for a server's reads too):

- the same text, tokenized the same way (the same token ids with the same bytes at
  every position, and every candidate id both records list naming the same token):
  token by token, the Δ log-probability of the text's token (exact) and the KL
  divergence between the two distributions;
- the same text, tokenized differently: per byte and per word, never per token;
- two different texts (a pair of statements): per word, the words aligned by their
  spelling (difflib), so the word that differs stands beside its counterpart.

The KL divergence is computed from the candidates each record carries (its top-n
and the text's token): over the ids both records know, with the rest of each
distribution lumped into one outcome. By the data-processing inequality that is a
lower bound on the true KL; it is exact when the known ids hold all the mass, and
`kl_mass` says how much of the first distribution they hold.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from itertools import accumulate

LN2 = math.log(2.0)
SAME_TOKENS, SAME_TEXT, TWO_TEXTS = "tokens", "bytes", "words"
WORD = re.compile(r"\w+|[^\w\s]+")  # a word, or a run of punctuation
MOST = 5  # positions listed where the reads disagree most
REST_FLOOR = 1e-12  # a lumped rest below this is taken as this (no division by zero)
NO_TOKEN_KL = (
    "The two models split this text into different tokens, so their distributions are "
    "over different vocabularies at different positions: token-level KL is not defined. "
    "They are compared per byte and per word (each word's surprisal summed over its tokens)."
)
TWO_TEXTS_WHY = (
    "Two different texts: each word's surprisal (bits, summed over its tokens), the words "
    "aligned by spelling, so the words that differ stand side by side."
)
SAME_TOKENS_WHY = (
    "One tokenization: per token, Δ log-probability (exact) and KL divergence over the "
    "candidates both reads list (a lower bound on the true KL)."
)


@dataclass(frozen=True)
class Word:
    """One word of a read text and what its tokens cost.

    Attributes:
        text: the word (letters and digits), or a run of punctuation.
        start, end: its UTF-8 byte offsets in the text.
        steps: the tokens that make it (a whitespace-only token belongs to the next word).
        bits: its surprisal: -sum of its tokens' log-probabilities, in bits; NaN when
            no token starts in it (a token that began in the word before holds it).
    """

    text: str
    start: int
    end: int
    steps: tuple[int, ...]
    bits: float


@dataclass(frozen=True)
class ReadComparison:
    """Two reads, row by row (a row is a token with SAME_TOKENS, else a word).

    Attributes:
        kind: SAME_TOKENS, SAME_TEXT (different tokenizers) or TWO_TEXTS.
        why: one sentence saying what is compared (and why not per token).
        labels: each row's token or word ("a / b" where two words differ).
        steps_a, steps_b: each read's step at the row (a word's first token;
            None where the row has no counterpart in that read).
        values_a, values_b: log-probability in nats (tokens) or surprisal in bits
            (words); NaN where absent.
        delta: values_b - values_a (NaN where a side is absent).
        kl, kl_mass: per token, KL(a || b) in nats (lower bound, see the module) and
            the share of a's distribution it covers; empty for words.
        most_delta, most_kl: rows with the largest |delta| and KL, largest first.
        bits_a, bits_b: each read's total surprisal in bits.
        bytes_a, bytes_b: UTF-8 bytes each read covers.
    """

    kind: str
    why: str
    labels: tuple[str, ...]
    steps_a: tuple[int | None, ...]
    steps_b: tuple[int | None, ...]
    values_a: tuple[float, ...]
    values_b: tuple[float, ...]
    delta: tuple[float, ...]
    kl: tuple[float, ...]
    kl_mass: tuple[float, ...]
    most_delta: tuple[int, ...]
    most_kl: tuple[int, ...]
    bits_a: float
    bits_b: float
    bytes_a: int
    bytes_b: int

    @property
    def bits_per_byte_a(self) -> float | None:
        return self.bits_a / self.bytes_a if self.bytes_a else None

    @property
    def bits_per_byte_b(self) -> float | None:
        return self.bits_b / self.bytes_b if self.bytes_b else None


def _bytes(record) -> bytes:
    return bytes(record.bytes) if record.bytes is not None else record.text.encode()


def _known(record) -> dict[int, float]:
    """Every id whose log-probability the record knows: its candidates and its token."""
    known = {c.token_id: c.logprob for c in record.top}
    if record.logprob is not None:
        known[record.token_id] = record.logprob
    return known


def same_tokenization(a, b) -> bool:
    """Two reads split their text the same way, over the same vocabulary: the same ids
    with the same bytes at every position, and no candidate id that the two records
    at a position name differently (a vocabulary that differs shows there)."""
    if len(a) != len(b) or not a:
        return False
    for ra, rb in zip(a, b, strict=True):
        if ra.token_id < 0 or ra.token_id != rb.token_id or _bytes(ra) != _bytes(rb):
            return False
        names = {c.token_id: c.text for c in ra.top}
        if any(names.get(c.token_id, c.text) != c.text for c in rb.top):
            return False
    return True


def token_kl(ra, rb) -> tuple[float, float]:
    """KL(a || b) in nats at one position, from what both records know.

    Returns:
        (the KL over the ids both know plus one lumped rest, a lower bound on the
        true KL; the probability mass of a that those ids hold).
    """
    ka, kb = _known(ra), _known(rb)
    shared = [i for i in ka if i in kb]
    pa = [math.exp(ka[i]) for i in shared]
    kl = math.fsum(p * (ka[i] - kb[i]) for p, i in zip(pa, shared, strict=True))
    mass_a = math.fsum(pa)
    rest_a = max(0.0, 1.0 - mass_a)
    rest_b = max(REST_FLOOR, 1.0 - math.fsum(math.exp(kb[i]) for i in shared))
    if rest_a > 0.0:
        kl += rest_a * math.log(rest_a / rest_b)
    return max(kl, 0.0), min(mass_a, 1.0)


def words_of(records) -> list[Word]:
    """The read's words, each with its tokens and surprisal (bits).

    Words (runs of letters and digits, or of punctuation) are found in the bytes the
    tokens cover (the text as read); a token belongs to the word holding its first
    non-whitespace byte (a token spanning two words counts for the first), a
    whitespace-only token to the next word (the last one at the end). So the
    words' bits add up to the read's total.

    Args:
        records: the read's token records, in order.
    """
    data = b"".join(_bytes(r) for r in records)
    text = data.decode("utf-8", "replace")
    at_byte = [0, *accumulate(len(ch.encode("utf-8", "replace")) for ch in text)]
    spans = [(at_byte[m.start()], at_byte[m.end()]) for m in WORD.finditer(text)]
    if not spans:
        return []
    owner, at, w = [], 0, 0
    for r in records:
        raw = _bytes(r)
        lead = len(raw) - len(raw.lstrip())
        first = at + lead if lead < len(raw) else at + len(raw)  # whitespace: the next word
        while w + 1 < len(spans) and spans[w][1] <= first:
            w += 1
        owner.append(w)
        at += len(raw)
    steps = [[] for _ in spans]
    nll = [[] for _ in spans]
    for r, w in zip(records, owner, strict=True):
        steps[w].append(r.step)
        nll[w].append(-r.logprob if r.logprob is not None else math.nan)
    return [
        Word(data[s:e].decode("utf-8", "replace"), s, e, tuple(st), _bits(n))
        for (s, e), st, n in zip(spans, steps, nll, strict=True)
    ]


def _bits(nll: list[float]) -> float:
    return math.fsum(nll) / LN2 if nll else math.nan


def _totals(records) -> tuple[float, int]:
    lps = [r.logprob for r in records if r.logprob is not None]
    return -math.fsum(lps) / LN2, sum(len(_bytes(r)) for r in records)


def _most(values, n: int = MOST) -> tuple[int, ...]:
    rows = [i for i, v in enumerate(values) if not math.isnan(v)]
    return tuple(sorted(rows, key=lambda i: (-abs(values[i]), i))[:n])


def _by_tokens(a, b) -> dict:
    va = [r.logprob if r.logprob is not None else math.nan for r in a]
    vb = [r.logprob if r.logprob is not None else math.nan for r in b]
    kls = [token_kl(ra, rb) for ra, rb in zip(a, b, strict=True)]
    kl = tuple(k for k, _m in kls)
    return dict(
        kind=SAME_TOKENS,
        why=SAME_TOKENS_WHY,
        labels=tuple(r.label for r in a),
        steps_a=tuple(r.step for r in a),
        steps_b=tuple(r.step for r in b),
        values_a=tuple(va),
        values_b=tuple(vb),
        delta=tuple(y - x for x, y in zip(va, vb, strict=True)),
        kl=kl,
        kl_mass=tuple(m for _k, m in kls),
        most_kl=_most(kl),
    )


def align_words(wa: list[Word], wb: list[Word]) -> list[tuple[int | None, int | None]]:
    """Rows of (word of a, word of b), aligned by spelling; None: no counterpart."""
    rows: list[tuple[int | None, int | None]] = []
    matcher = difflib.SequenceMatcher(None, [w.text for w in wa], [w.text for w in wb], False)
    for _op, i1, i2, j1, j2 in matcher.get_opcodes():
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            i, j = i1 + k, j1 + k
            rows.append((i if i < i2 else None, j if j < j2 else None))
    return rows


def _at(words: list[Word], i: int | None) -> Word | None:
    return words[i] if i is not None else None


def _by_words(a, b, kind: str) -> dict:
    wa, wb = words_of(a), words_of(b)
    rows = align_words(wa, wb)
    va = [wa[i].bits if i is not None else math.nan for i, _j in rows]
    vb = [wb[j].bits if j is not None else math.nan for _i, j in rows]
    labels = []
    for i, j in rows:
        names = [
            w.text
            for w in (wa[i] if i is not None else None, wb[j] if j is not None else None)
            if w
        ]
        labels.append(names[0] if len(set(names)) == 1 else " / ".join(names))
    return dict(
        kind=kind,
        why=NO_TOKEN_KL if kind == SAME_TEXT else TWO_TEXTS_WHY,
        labels=tuple(labels),
        steps_a=tuple(wa[i].steps[0] if i is not None and wa[i].steps else None for i, _ in rows),
        steps_b=tuple(wb[j].steps[0] if j is not None and wb[j].steps else None for _, j in rows),
        values_a=tuple(va),
        values_b=tuple(vb),
        delta=tuple(y - x for x, y in zip(va, vb, strict=True)),
        kl=(),
        kl_mass=(),
        most_kl=(),
    )


def compare_reads(a, b, text_a: str, text_b: str) -> ReadComparison:
    """Compare two reads (see the module's docstring for which comparison applies).

    Args:
        a, b: the two reads' token records, in order.
        text_a, text_b: the texts they read.

    Returns:
        The ReadComparison.
    """
    a, b = list(a), list(b)
    if text_a == text_b and same_tokenization(a, b):
        rows = _by_tokens(a, b)
    else:
        rows = _by_words(a, b, SAME_TEXT if text_a == text_b else TWO_TEXTS)
    (bits_a, bytes_a), (bits_b, bytes_b) = _totals(a), _totals(b)
    return ReadComparison(
        most_delta=_most(rows["delta"]),
        bits_a=bits_a,
        bits_b=bits_b,
        bytes_a=bytes_a,
        bytes_b=bytes_b,
        **rows,
    )
