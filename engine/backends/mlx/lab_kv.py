"""Full vs quantized KV cache: the same greedy answer run with keys and values kept in
float and in mlx-lm's quantized KV cache (8 and 4 bits). Per precision: the cache's
bytes, prefill and decode speed as the playground runs them, and each answer step's
KL divergence from the float cache's distribution.

The KL is teacher-forced: the float run's prompt and answer tokens are fed one by one
through both caches, so every step compares two distributions over the same context
(a quantized run that chose another word would otherwise compare different texts).
"""

from __future__ import annotations

import math

import mlx.core as mx

from engine.backends.mlx.generate import LoadedModel, generate_records
from engine.backends.mlx.prompt_reuse import forget, new_cache
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings


def _run(lm: LoadedModel, prompt, settings: SamplingSettings) -> RunResult:
    result = RunResult()
    for record in generate_records(lm, prompt, settings):
        result.add(record)
    return result


def step_logprobs(lm: LoadedModel, ids: list[int], n_prompt: int) -> list:
    """Log-probabilities (V,) at every answer step: the prompt prefilled in one pass,
    then each token fed alone, as decode feeds it, through a fresh cache of `lm`'s kind."""
    from mlx_lm.models.cache import make_prompt_cache

    cache = new_cache(lm, make_prompt_cache)
    logits = lm.model(mx.array([ids[:n_prompt]]), cache=cache)[:, -1, :]  # (1, V)
    out = []
    for t in range(n_prompt, len(ids) + 1):
        out.append(logits[0] - mx.logsumexp(logits[0]))  # (V,)
        if t < len(ids):
            logits = lm.model(mx.array([[ids[t]]]), cache=cache)[:, -1, :]
    mx.eval(out)
    return out


def kl_per_step(reference: list, other: list) -> list[float]:
    """KL(reference ‖ other) in nats at each step of two lists of (V,) logprobs."""
    kls = [mx.sum(mx.exp(p) * (p - q)) for p, q in zip(reference, other, strict=True)]
    mx.eval(kls)
    return [max(float(k), 0.0) for k in kls]


def kv_precision_experiment(
    lm: LoadedModel, prompt, tokens: int = 16, bits=(8, 4), system: str | None = None
) -> list[dict]:
    """Rows for float and each of `bits`: bytes, speed, agreement and per-step KL.

    Args:
        lm: the loaded model (its own KV settings are restored afterwards).
        prompt: the prompt text or chat messages.
        tokens: answer tokens (greedy).
        bits: quantized KV precisions to compare with float.
        system: the system prompt.

    Returns:
        One dict per precision: kv_bits (None: float), kv_cache_bytes,
        kv_cache_tokens, bytes_per_token, ttft_s, decode_tps, tokens, same_tokens,
        kl (per answer step, nats), mean_kl, max_kl.
    """
    saved = lm.kv_bits, lm.max_kv_size
    base = SamplingSettings(
        temperature=0, max_tokens=tokens, seed=0, system_prompt=system, prompt_cache=False
    )
    rows, reference, ref_ids = [], None, None
    try:
        lm.max_kv_size = None
        for b in (None, *bits):
            lm.kv_bits = b
            forget(lm)
            _run(lm, prompt, base.with_(max_tokens=1))  # warm-up: compile, caches
            run = _run(lm, prompt, base)
            d = run.done
            answer = [t.token_id for t in run.tokens]
            ref_ids = answer if ref_ids is None else ref_ids
            rows.append(_row(b, run, answer, ref_ids))
            lps = step_logprobs(lm, _ids(lm, prompt, base, ref_ids), d.prompt_tokens)
            if reference is None:
                reference = lps
            kl = kl_per_step(reference, lps)
            rows[-1].update(kl=kl, mean_kl=sum(kl) / len(kl), max_kl=max(kl))
    finally:
        lm.kv_bits, lm.max_kv_size = saved
        forget(lm)
    return rows


def _ids(lm: LoadedModel, prompt, settings: SamplingSettings, answer: list[int]) -> list[int]:
    """The prompt's token ids as the run encoded them, then the reference answer's
    (its last token only conditions nothing: the list ends one step past it)."""
    from engine.backends.mlx.generate import encode_prompt

    return list(encode_prompt(lm.tokenizer, prompt, settings).ids) + answer[:-1]


def _row(bits, run: RunResult, answer: list[int], reference: list[int]) -> dict:
    d = run.done
    return {
        "kv_bits": bits,
        "kv_cache_bytes": d.kv_cache_bytes,
        "kv_cache_tokens": d.kv_cache_tokens,
        "bytes_per_token": d.kv_cache_bytes / d.kv_cache_tokens if d.kv_cache_tokens else None,
        "ttft_s": d.ttft_s,
        "decode_tps": d.decode_tps if d.decode_tps and math.isfinite(d.decode_tps) else None,
        "tokens": len(answer),
        "same_tokens": answer == reference,
    }
