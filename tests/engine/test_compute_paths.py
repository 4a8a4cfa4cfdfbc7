"""The memory path (packed weights as stored) and the speed path (float32) give the
same log-probabilities. Seen: Gemma 3's first log-probability was -2.000 on one and
-1.644 on the other, with different greedy text: mlx-lm runs the stored model with
float16 scales, so float16 activations. The reference here is bare mlx-lm,
dequantized to float32 (no Logitscope code)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from mlx.utils import tree_flatten

from engine.run.prompt import encode_prompt
from engine.run.settings import SamplingSettings

AGREE = 1e-4  # largest |Δ log p| between the paths, over the whole vocabulary
PROMPT = "What is the capital of France?"


def _last_logprobs(model, ids) -> np.ndarray:
    logits = model(mx.array(ids)[None])[0, -1].astype(mx.float32)  # (V,)
    return np.array(logits - mx.logsumexp(logits), dtype=np.float64)


@pytest.mark.parametrize("which", ["smollm", "gemma"])
def test_memory_path_matches_float32(which, request):
    from mlx_lm.utils import dequantize_model

    from engine.backends.mlx.loader import load_model

    folder = request.getfixturevalue("default_model_path" if which == "smollm" else "gemma_path")
    lm = load_model(folder, prefer="memory")[0]
    assert lm.compute.startswith("as stored, float32 scales and activations")
    assert {str(v.dtype) for _k, v in tree_flatten(lm.model.parameters())} == {
        "mlx.core.uint32",
        "mlx.core.float32",
    }  # packed weights, float32 all else
    # raw: only the last position is compared, and the packed kernel costs a decode step
    # per prompt token on the CPU (the chat template's 16-37 tokens took 2-3x as long)
    ids = encode_prompt(lm.tokenizer, PROMPT, SamplingSettings(chat_template=False)).ids
    memory = _last_logprobs(lm.model, ids)
    # The speed path's weights, by bare mlx-lm: the same float32 scales, dequantized.
    want = _last_logprobs(dequantize_model(lm.model), ids)
    assert np.abs(memory - want).max() < AGREE
    assert memory.argmax() == want.argmax()
    if which == "gemma":  # what the float16 scales did: mlx-lm's own stored model
        stored = _last_logprobs(request.getfixturevalue("gemma").model, ids)
        assert np.abs(stored - want).max() > 100 * AGREE
