"""Quantization A/B: what re-quantizing a model does, token by token.

The reference is the model's weights dequantized to float32 (for a model shipped
quantized, e.g. the default 4-bit file, that is "dequantized from the shipped
file", and the label says so). Variants are made at run time from those weights
with MLX's affine quantization (8, 6, 4, 3 bits …) and are labelled
re-quantized. All of them are teacher-forced over the same tokens: the prompt
and the reference's own greedy answer. Per token: KL(reference ‖ variant),
whether the top prediction agrees, and the change in the answer token's
log-probability; per model: perplexity over the answer, weight bytes, and
prefill and decode speed measured on the same prompt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from engine.backends.mlx.quantized_blas import blas_products

GROUP = 64
TOP = 5  # alternatives kept per answer token, for the side-by-side distributions


@dataclass
class Variant:
    """One model variant's numbers against the reference, per answer token."""

    name: str
    bits: int | None  # None: the float32 reference
    weight_bytes: int
    kl: list[float] = field(default_factory=list)  # per answer token, nats
    agree: list[bool] = field(default_factory=list)  # top-1 equals the reference's
    delta_logprob: list[float] = field(default_factory=list)  # answer token, vs reference
    logprob: list[float] = field(default_factory=list)  # answer token, this model
    prefill_tps: float = 0.0
    decode_tps: float = 0.0
    top: list[list[tuple[int, float]]] = field(default_factory=list)  # per token: (id, p)
    key: str = ""  # "None" (the reference), "8" … (re-quantized), "installed:…" (as installed)

    @property
    def perplexity(self) -> float:
        """exp(-mean logprob) of the answer under this variant; NaN with no tokens."""
        return float(np.exp(-np.mean(self.logprob))) if self.logprob else float("nan")

    @property
    def mean_kl(self) -> float:
        """Mean KL divergence from the reference in nats; NaN with no tokens."""
        return float(np.mean(self.kl)) if self.kl else float("nan")

    @property
    def agreement(self) -> float:
        """Share of steps whose top-1 token equals the reference's; NaN with no tokens."""
        return float(np.mean(self.agree)) if self.agree else float("nan")


def _weight_bytes(model) -> int:
    from mlx.utils import tree_flatten

    return int(sum(v.nbytes for _k, v in tree_flatten(model.parameters())))


def log_softmax(logits: mx.array) -> np.ndarray:
    """Log-probabilities of `logits` along the last axis, as float64 NumPy."""
    x = logits.astype(mx.float32)
    return np.array(x - mx.logsumexp(x, axis=-1, keepdims=True), dtype=np.float64)


def teacher_forced(model, ids: list[int], start: int) -> np.ndarray:
    """Log-probabilities (T - start, V) predicting ids[start:] from what precedes."""
    logits = model(mx.array(ids[:-1])[None])[0]
    return log_softmax(logits[start - 1 :])


def compare(ref_lp: np.ndarray, var_lp: np.ndarray, answer: list[int]) -> dict:
    """Per-token KL(ref ‖ var), top-1 agreement and Δlogprob of the answer tokens."""
    p = np.exp(ref_lp)
    kl = (p * (ref_lp - var_lp)).sum(-1)
    rows = np.arange(len(answer))
    return {
        "kl": np.maximum(kl, 0.0).tolist(),
        "agree": (ref_lp.argmax(-1) == var_lp.argmax(-1)).tolist(),
        "delta_logprob": (var_lp[rows, answer] - ref_lp[rows, answer]).tolist(),
        "logprob": var_lp[rows, answer].tolist(),
    }


def _speed(model, prompt_ids: list[int], steps: int = 4) -> tuple[float, float]:
    from mlx_lm.models.cache import make_prompt_cache

    ids = mx.array(prompt_ids)[None]
    # One row warms the decode path; the whole-sequence path (quantized_blas) ran in the
    # teacher-forced pass just before. Four rows cost four steps of a slow kernel.
    warm = make_prompt_cache(model)
    mx.eval(model(ids[:, :1], cache=warm))
    cache = make_prompt_cache(model)
    t = time.perf_counter()
    mx.eval(model(ids, cache=cache))
    prefill = len(prompt_ids) / (time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(steps):
        mx.eval(model(ids[:, -1:], cache=cache))
    return prefill, steps / (time.perf_counter() - t)


def greedy_answer(model, prompt_ids: list[int], n: int, eos: set[int]) -> list[int]:
    """Up to `n` greedy token ids after `prompt_ids` (stops after an `eos` id)."""
    from mlx_lm.models.cache import make_prompt_cache

    cache = make_prompt_cache(model)
    logits = model(mx.array(prompt_ids)[None], cache=cache)[0, -1]
    out = []
    for _ in range(n):
        tok = int(mx.argmax(logits).item())
        out.append(tok)
        if tok in eos:
            break
        logits = model(mx.array([[tok]]), cache=cache)[0, -1]
    return out


def run_quant_lab(
    load_reference,
    prompt_ids: list[int],
    eos: set[int],
    bits=(8, 6, 4, 3),
    answer_tokens: int = 24,
    progress=None,
    installed=(),
) -> tuple[list[int], list[Variant]]:
    """Teacher-force the reference's greedy answer through each variant.

    Args:
        load_reference: () -> a fresh float32 model (each variant quantizes its own copy).
        installed: (key, name, load) of models as installed (the stored weights, another
            installed variant of the same model), measured the same way, not re-quantized.
    Returns:
        (answer ids, [reference, re-quantized variants..., installed...])
    """
    ref = load_reference()
    answer = greedy_answer(ref, prompt_ids, answer_tokens, eos)
    ids, start = prompt_ids + answer, len(prompt_ids)
    ref_lp = teacher_forced(ref, ids, start)
    out = []
    jobs = [
        (str(b), b, "float32 reference" if b is None else f"{b}-bit (re-quantized)", None)
        for b in (None, *bits)
    ]
    jobs += [(key, None, name, load) for key, name, load in installed]
    for key, b, name, load in jobs:
        if progress:
            progress(f"Measuring {name}…", len(out) / len(jobs))
        model = ref if key == "None" else (load or load_reference)()
        if b is not None:
            nn.quantize(model, group_size=GROUP, bits=b)
            mx.eval(model.parameters())
        blas_products(model)  # whole-sequence passes on BLAS (quantized_blas.py)
        v = Variant(name, b, _weight_bytes(model), key=key)
        # Only the reference reuses its own numbers; installed models are measured too.
        lp = ref_lp if key == "None" else teacher_forced(model, ids, start)  # (A, V)
        for attr, value in compare(ref_lp, lp, answer).items():
            setattr(v, attr, value)
        best = np.argsort(-lp, axis=-1)[:, :TOP]
        v.top = [[(int(t), float(np.exp(lp[i, t]))) for t in row] for i, row in enumerate(best)]
        v.prefill_tps, v.decode_tps = _speed(model, prompt_ids)
        out.append(v)
    return answer, out
