"""Two reads compared (engine/reading/compare_reads.py) against NumPy float64, on token
records built by hand from known distributions: no model needed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.reading.compare_reads import (
    SAME_TEXT,
    SAME_TOKENS,
    TWO_TEXTS,
    compare_reads,
    same_tokenization,
    token_kl,
    words_of,
)
from engine.run.records import TokenRecord, TopToken

VOCAB = [b"The", b" cat", b" sat", b".", b" dog", b" ran", b" on", b" mat"]


def dist(rng, v=len(VOCAB)) -> np.ndarray:
    """A random log-distribution over `v` ids (float64)."""
    z = rng.normal(size=v) * 2.0
    return z - np.log(np.exp(z).sum())


def rec(step, tid, raw: bytes, logp: np.ndarray, top_n: int, names=None) -> TokenRecord:
    order = np.argsort(-logp, kind="stable")[:top_n]
    names = names or [v.decode() for v in VOCAB]
    top = tuple(TopToken(int(i), names[i], float(logp[i]), None) for i in order)
    lp = float(logp[tid])
    return TokenRecord(
        step=step,
        token_id=tid,
        text=raw.decode(),
        logprob=lp,
        prob=math.exp(lp),
        sampled_logprob=lp,
        top=top,
        sampled_top=(),
        entropy=None,
        sampled_entropy=None,
        elapsed_s=0.0,
        latency_s=0.0,
        context_tokens=0,
        bytes=tuple(raw),
        rank=int((logp > logp[tid]).sum()) + 1,
        read=True,
    )


def read(ids, dists, top_n=len(VOCAB), vocab=VOCAB, names=None):
    return [
        rec(s, t, vocab[t], d, top_n, names)
        for s, (t, d) in enumerate(zip(ids, dists, strict=True))
    ]


IDS = [0, 1, 2, 6, 7, 3]  # "The cat sat on mat."
TEXT = "The cat sat on mat."


def kl64(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sum(np.exp(p) * (p - q)))


def test_one_tokenization_gives_exact_delta_and_kl_with_whole_distributions():
    rng = np.random.default_rng(0)
    da, db = [dist(rng) for _ in IDS], [dist(rng) for _ in IDS]
    a, b = read(IDS, da), read(IDS, db)
    c = compare_reads(a, b, TEXT, TEXT)
    assert c.kind == SAME_TOKENS and same_tokenization(a, b)
    want_delta = np.array([db[i][t] - da[i][t] for i, t in enumerate(IDS)])
    want_kl = np.array([kl64(p, q) for p, q in zip(da, db, strict=True)])
    np.testing.assert_allclose(c.delta, want_delta, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.kl, want_kl, rtol=0, atol=1e-12)  # every id known: exact
    np.testing.assert_allclose(c.kl_mass, 1.0, atol=1e-12)
    assert list(c.most_delta) == list(np.argsort(-np.abs(want_delta), kind="stable")[:5])
    assert list(c.most_kl) == list(np.argsort(-want_kl, kind="stable")[:5])
    assert c.labels == ("The", " cat", " sat", " on", " mat", ".")
    bits_a = -sum(da[i][t] for i, t in enumerate(IDS)) / np.log(2)
    assert c.bits_a == pytest.approx(bits_a, abs=1e-12)
    assert c.bits_per_byte_a == pytest.approx(bits_a / len(TEXT.encode()), abs=1e-12)


def test_kl_from_top_candidates_is_the_coarsened_kl_a_lower_bound():
    rng = np.random.default_rng(1)
    for _ in range(20):
        pa, pb = dist(rng), dist(rng)
        ra, rb = rec(0, 2, VOCAB[2], pa, 3), rec(0, 2, VOCAB[2], pb, 3)
        known_a = {c.token_id for c in ra.top} | {2}
        shared = sorted(known_a & ({c.token_id for c in rb.top} | {2}))
        p, q = np.exp(pa[shared]), np.exp(pb[shared])
        rest_p, rest_q = 1 - p.sum(), 1 - q.sum()
        want = float(np.sum(p * np.log(p / q)) + rest_p * np.log(rest_p / rest_q))
        kl, mass = token_kl(ra, rb)
        assert kl == pytest.approx(want, abs=1e-12)
        assert mass == pytest.approx(p.sum(), abs=1e-12)
        assert kl <= kl64(pa, pb) + 1e-12  # data-processing inequality


def test_a_vocabulary_that_differs_is_not_one_tokenization():
    rng = np.random.default_rng(2)
    d = [dist(rng) for _ in IDS]
    names = [v.decode() for v in VOCAB]
    names[5] = " walked"  # the same id names another token in b's vocabulary
    a, b = read(IDS, d), read(IDS, d, names=names)
    assert not same_tokenization(a, b)
    assert compare_reads(a, b, TEXT, TEXT).kind == SAME_TEXT


def test_two_tokenizers_compare_per_word_and_per_byte():
    rng = np.random.default_rng(3)
    vocab_b = [b"Th", b"e", b" c", b"at", b" sat on", b" mat", b"."]
    ids_b = [0, 1, 2, 3, 4, 5, 6]
    da = [dist(rng) for _ in IDS]
    db = [dist(rng, len(vocab_b)) for _ in ids_b]
    names_b = [v.decode() for v in vocab_b]
    a = read(IDS, da)
    b = read(ids_b, db, vocab=vocab_b, names=names_b)
    c = compare_reads(a, b, TEXT, TEXT)
    assert c.kind == SAME_TEXT and c.kl == () and "not defined" in c.why
    assert c.labels == ("The", "cat", "sat", "on", "mat", ".")
    lb = [db[i][t] for i, t in enumerate(ids_b)]
    # b's words: The = Th+e, cat = c+at, " sat on" counts for "sat" (its first word).
    want_b = -np.array([lb[0] + lb[1], lb[2] + lb[3], lb[4], np.nan, lb[5], lb[6]]) / np.log(2)
    np.testing.assert_allclose(c.values_b, want_b, rtol=0, atol=1e-12)
    la = np.array([da[i][t] for i, t in enumerate(IDS)])
    np.testing.assert_allclose(c.values_a, -la / np.log(2), rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.delta, want_b + la / np.log(2), rtol=0, atol=1e-12)
    n_bytes = len(TEXT.encode())
    assert c.bits_per_byte_b == pytest.approx(-np.sum(lb) / np.log(2) / n_bytes, abs=1e-12)
    assert c.steps_b == (0, 2, 4, None, 5, 6)  # "on" has no token of its own in b
    assert 3 not in c.most_delta  # no figure there: never listed


def test_two_texts_align_the_word_that_differs():
    rng = np.random.default_rng(4)
    ids_b = [0, 1, 5, 6, 7, 3]  # "The cat ran on mat."
    da, db = [dist(rng) for _ in IDS], [dist(rng) for _ in ids_b]
    c = compare_reads(read(IDS, da), read(ids_b, db), TEXT, "The cat ran on mat.")
    assert c.kind == TWO_TEXTS
    assert c.labels == ("The", "cat", "sat / ran", "on", "mat", ".")
    row = c.labels.index("sat / ran")
    want = (-db[2][5] + da[2][2]) / np.log(2)
    assert c.delta[row] == pytest.approx(want, abs=1e-12)
    assert (c.steps_a[row], c.steps_b[row]) == (2, 2)


def test_words_own_every_token_whitespace_and_non_ascii_included():
    vocab = [b"Gr", "\u00fc".encode(), "\u00dfe".encode(), b" ", b" ", b"Welt", b"!\n"]
    rng = np.random.default_rng(5)
    logp = [dist(rng, len(vocab)) for _ in vocab]
    recs = read(list(range(len(vocab))), logp, vocab=vocab, names=[v.decode() for v in vocab])
    words = words_of(recs)
    assert [w.text for w in words] == ["Grüße", "Welt", "!"]
    assert [w.steps for w in words] == [(0, 1, 2), (3, 4, 5), (6,)]
    assert (words[1].start, words[1].end) == (len("Grüße  ".encode()), len("Grüße  Welt".encode()))
    total = -sum(float(logp[i][i]) for i in range(len(vocab))) / np.log(2)
    assert math.fsum(w.bits for w in words) == pytest.approx(total, abs=1e-12)
