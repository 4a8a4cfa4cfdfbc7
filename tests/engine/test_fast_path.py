"""The CPU fast path: OpenBLAS under MLX, and a quantized model run as float32."""

from __future__ import annotations

import sys

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx import compute_path
from engine.backends.mlx.fast_blas import status
from engine.backends.mlx.generate import generate_records
from engine.backends.mlx.loader import load_model
from engine.run.settings import SamplingSettings
from tests.engine.test_real_model import collect

linux_cpu = pytest.mark.skipif(
    sys.platform != "linux" or mx.default_device().type != mx.DeviceType.cpu,
    reason="the fast path is for MLX's Linux CPU build",
)


@linux_cpu
def test_openblas_is_bound_and_correct():
    assert status().ok, status().detail
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 576), np.float32), rng.standard_normal((576, 300), np.float32)
    np.testing.assert_allclose(np.array(mx.array(a) @ mx.array(b)), a @ b, rtol=1e-4, atol=1e-4)


@linux_cpu
def test_float32_path_keeps_the_quantized_tokens_and_logprobs(
    smollm, smollm_stored, default_model_path
):
    fast = smollm  # the session's load_model(default_model_path, prefer="speed")
    assert fast.compute.startswith("float32") and "OpenBLAS" in fast.compute
    # The same quantized weights with float32 scales and activations: only float
    # rounding (OpenBLAS vs MLX's quantized kernel) may differ from the fast path.
    q32, _info, _s = load_model(default_model_path)
    q32.model.set_dtype(mx.float32)
    # raw: a 9-token prompt (the chat template's 35 cost a decode step each on the packed
    # kernel, twice)
    settings = SamplingSettings(
        temperature=0, max_tokens=16, seed=0, top_n=5, prompt_cache=False, chat_template=False
    )
    prompt = "Name three colours of the rainbow."
    q16 = collect(generate_records(smollm_stored, prompt, settings))  # float16 scales
    q = collect(generate_records(q32, prompt, settings))
    f = collect(generate_records(fast, prompt, settings))
    assert [t.token_id for t in f.tokens] == [t.token_id for t in q.tokens]
    assert [t.token_id for t in f.tokens] == [t.token_id for t in q16.tokens]
    for a, b, c in zip(f.tokens, q.tokens, q16.tokens, strict=True):
        assert abs(a.logprob - b.logprob) < 1e-3
        assert abs(a.entropy - b.entropy) < 1e-3
        assert abs(a.logprob - c.logprob) < 2e-2  # float16 activations round more
    # Which path is faster is a benchmark's question (BENCHMARKS.md, the compute paths),
    # not this correctness test's: a loaded machine must not turn it red.


def test_memory_preference_and_budget(default_model_path, monkeypatch):
    kept, _info, _s = load_model(default_model_path, prefer="memory")
    assert kept.compute.startswith("as stored") and "memory" in kept.compute
    need, quantized = compute_path.float32_bytes(kept.model)
    assert quantized and 500e6 < need < 600e6  # 135M parameters x 4 bytes
    monkeypatch.setattr(compute_path, "available_memory", lambda: int(need))  # half fits
    small, _info, _s = load_model(default_model_path, prefer="auto")
    assert small.compute.startswith("as stored")
    if status().ok:
        assert "over the budget" in small.compute
