"""Temperature curves from a record against the exact softmax of full logits."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.generate import generate_records
from engine.run import temperature
from engine.run.prompt import encode_prompt
from engine.run.records import SWEEP_TEMPERATURES, TokenRecord
from engine.run.settings import SamplingSettings


def exact_probs(logprobs: np.ndarray, ids, temps):
    out = []
    for t in temps:
        s = logprobs.astype(np.float64) / t
        p = np.exp(s - np.logaddexp.reduce(s))
        out.append(p[ids])
    return np.array(out).T


@pytest.fixture(scope="module")
def step_and_logits(smollm):
    settings = SamplingSettings(temperature=0.0, max_tokens=3)
    prompt = "Describe the sea."
    tokens = [r for r in generate_records(smollm, prompt, settings) if isinstance(r, TokenRecord)]
    ids = encode_prompt(smollm.tokenizer, prompt, settings).ids + [tokens[0].token_id]
    logits = smollm.model(mx.array(ids)[None])[0, -1].astype(mx.float32)
    lp = np.array(logits - mx.logsumexp(logits))
    return tokens[1], lp


def test_curves_match_exact_softmax_at_any_temperature(step_and_logits):
    record, lp = step_and_logits
    ids = [c.token_id for c in record.top[:5]]
    temps = [0.05, 0.1, 0.33, 0.7, 0.73, 1.0, 1.45, 2.0]
    got = temperature.probabilities(record, temps, 5)
    np.testing.assert_allclose(got, exact_probs(lp, ids, temps), atol=temperature.PROB_TOL)
    nodes = temperature.probabilities(record, SWEEP_TEMPERATURES, 5)
    np.testing.assert_allclose(nodes, exact_probs(lp, ids, SWEEP_TEMPERATURES), atol=2e-4)


def test_greedy_limit_and_entropy(step_and_logits):
    record, lp = step_and_logits
    p0 = temperature.probabilities(record, [0.0], 3)[:, 0]
    assert list(p0) == [1.0, 0.0, 0.0]
    p = np.exp(lp.astype(np.float64))
    assert temperature.entropy(record, [1.0])[0] == pytest.approx(-(p * lp).sum(), abs=1e-3)
    assert temperature.entropy(record, [0.0])[0] == 0.0


def _record_from_logits(lp: np.ndarray) -> TokenRecord:
    """A record built by the engine's own step sampler and CPU sweep from these logits."""
    from engine.backends.mlx.host_sweep import temperature_sweep_np
    from engine.backends.mlx.instrument import candidates, make_step_sampler, unpack

    sample = make_step_sampler(SamplingSettings(temperature=0.0), lp.shape[0], False)
    _token, packed, raw = sample(mx.array(lp[None].astype(np.float32)), None)
    stats = unpack(packed.tolist(), sample.n)
    logz, ent = temperature_sweep_np(np.array(raw))
    top = candidates(stats.top_ids, stats.top_logprobs, lambda i: b"t")
    return TokenRecord(
        0,
        stats.token_id,
        "",
        stats.logprob,
        1.0,
        0.0,
        top,
        (),
        0.0,
        0.0,
        0.0,
        0.0,
        1,
        tuple(logz),
        tuple(ent),
    )


@pytest.mark.parametrize("gap", [0.0, 0.01, 0.05, 0.1])
def test_close_top_two_are_exact_on_a_200_point_grid(step_and_logits, gap):
    """Seen: at T = 0.025 with the top two close, the chart showed 0.768 and 0.458
    (summing to 1.23) where the truth is 0.626 and 0.374."""
    _record, lp = step_and_logits
    lp = lp.astype(np.float64).copy()
    order = np.argsort(-lp)
    lp[order[1]] = lp[order[0]] - gap
    lp -= np.logaddexp.reduce(lp)
    record = _record_from_logits(lp)
    temps = np.linspace(0.01, 2.0, 200)
    ids = [c.token_id for c in record.top[:5]]
    got = temperature.probabilities(record, temps, 5)
    np.testing.assert_allclose(got, exact_probs(lp, ids, temps), atol=temperature.PROB_TOL)
    want_h = []
    for t in temps:
        s = lp / t
        p = np.exp(s - np.logaddexp.reduce(s))
        want_h.append(-(p * np.log(np.maximum(p, 1e-300))).sum())
    np.testing.assert_allclose(
        temperature.entropy(record, temps), want_h, atol=temperature.ENTROPY_TOL
    )
    assert (got.sum(axis=0) <= 1 + temperature.PROB_TOL).all()  # never more than certain
