"""Temperature curves from a record against the exact softmax of full logits."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine import temperature
from engine.generate import generate_records
from engine.prompt import encode_prompt
from engine.records import SWEEP_TEMPERATURES, TokenRecord
from engine.settings import SamplingSettings


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
    np.testing.assert_allclose(got, exact_probs(lp, ids, temps), atol=2e-3)
    nodes = temperature.probabilities(record, SWEEP_TEMPERATURES, 5)
    np.testing.assert_allclose(nodes, exact_probs(lp, ids, SWEEP_TEMPERATURES), atol=2e-4)


def test_greedy_limit_and_entropy(step_and_logits):
    record, lp = step_and_logits
    p0 = temperature.probabilities(record, [0.0], 3)[:, 0]
    assert list(p0) == [1.0, 0.0, 0.0]
    p = np.exp(lp.astype(np.float64))
    assert temperature.entropy(record, [1.0])[0] == pytest.approx(-(p * lp).sum(), abs=1e-3)
    assert temperature.entropy(record, [0.0])[0] == 0.0
