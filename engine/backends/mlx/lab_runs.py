"""The lab's experiments as the engine runs them (for the window and the CLI):
each takes a model folder, the prompt and settings, and returns JSON-ready numbers."""

from __future__ import annotations

from pathlib import Path

import mlx.nn as nn

from engine.errors import SettingsError


def _encode(lm, prompt, settings) -> list[int]:
    from engine.prompt import encode_prompt

    return encode_prompt(lm.tokenizer, prompt, settings).ids


def _label(lm, tid: int) -> str:
    from engine.records import token_label

    return token_label(lm.token_bytes(int(tid)))


def installed_variants(folder: Path, info, vocab_size: int, quantized: bool) -> list:
    """(key, name, load) of the model as installed (when the reference is dequantized
    from it) and of other installed models that are the same model: same architecture,
    parameter count and vocabulary."""
    from engine.backends.mlx.loader import load_model
    from engine.models.catalogue import list_models

    out = []
    if quantized:
        out.append(("installed:" + info.name, f"{info.quantization}{_scales(folder)}, as installed",
                    lambda: load_model(folder)[0].model))  # fmt: skip
    for other in list_models():
        same = (other.architecture == info.architecture and other.parameters == info.parameters
                and Path(other.path).resolve() != Path(folder).resolve())  # fmt: skip
        if same and _vocab_size(Path(other.path)) == vocab_size:
            name = f"{other.name} ({other.quantization}){_scales(Path(other.path))}, as installed"
            path = Path(other.path)
            out.append(("installed:" + other.name, name, lambda p=path: load_model(p)[0].model))
    return out


def _scales(folder: Path) -> str:
    """ ", float16 scales": what an installed row computes in, as mlx-lm runs it (the
    engine's own stored path upcasts them to float32; compute_path.stored_float32)."""
    from engine.models.hf_cache import safetensors_header

    try:
        for weights in sorted(folder.glob("*.safetensors")):
            for name, t in safetensors_header(weights).items():
                if name.endswith(".scales") and isinstance(t, dict):
                    return f", {str(t.get('dtype', '')).lower().replace('f', 'float', 1)} scales"
    except (OSError, ValueError):
        pass
    return ""


def _vocab_size(folder: Path) -> int | None:
    import json

    try:
        return int(json.loads((folder / "config.json").read_text())["vocab_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def quant_experiment(
    folder: Path, prompt, settings, bits=(8, 6, 4, 3), tokens: int = 24, progress=None
) -> dict:
    from engine.backends.mlx.lab_quant import run_quant_lab
    from engine.backends.mlx.loader import load_model
    from engine.models.catalogue import inspect_model

    bad = [b for b in bits if b not in (2, 3, 4, 5, 6, 8)]
    if bad or not bits:
        raise SettingsError(f"MLX quantizes to 2, 3, 4, 5, 6 or 8 bits, not {bad or bits}")
    if not 1 <= tokens <= 512:
        raise SettingsError("the answer length must be between 1 and 512 tokens")
    info = inspect_model(folder)
    lm = load_model(folder, prefer="speed")[0]
    ids = _encode(lm, prompt, settings)

    def load_reference():
        return load_model(folder, prefer="speed")[0].model

    quantized = "bit" in info.quantization
    answer, variants = run_quant_lab(
        load_reference,
        ids,
        set(lm.tokenizer.eos_token_ids),
        tuple(bits),
        tokens,
        progress,
        installed_variants(folder, info, lm.vocab_size, quantized),
    )
    reference = (
        f"float32, dequantized from the stored {info.quantization}"
        if quantized
        else f"as stored ({info.quantization})"
    )
    tops = {v.key: v.top for v in variants}
    words = {t for rows in tops.values() for row in rows for t, _p in row} | set(answer)
    return {
        "model": info.name,
        "reference": reference,
        "answer_ids": answer,
        "answer": [_label(lm, t) for t in answer],
        "labels": {str(t): _label(lm, t) for t in words},
        "top": tops,
        "variants": [
            {
                "name": v.name,
                "key": v.key,
                "bits": v.bits,
                "weight_bytes": v.weight_bytes,
                "mean_kl": v.mean_kl,
                "top1_agreement": v.agreement,
                "perplexity": v.perplexity,
                "prefill_tps": v.prefill_tps,
                "decode_tps": v.decode_tps,
                "kl": v.kl,
                "agree": v.agree,
                "delta_logprob": v.delta_logprob,
            }
            for v in variants
        ],
    }


def speculative_experiment(
    folder: Path,
    prompt,
    settings,
    ks=(1, 2, 4),
    draft_bits: int = 3,
    tokens: int = 32,
    progress=None,
) -> dict:
    from engine.backends.mlx.lab_speculative import plain_greedy, speculative_greedy
    from engine.backends.mlx.loader import load_model

    if draft_bits not in (2, 3, 4, 5, 6, 8):
        raise SettingsError("the draft's bits must be 2, 3, 4, 5, 6 or 8")
    if not ks or not all(1 <= k <= 16 for k in ks):
        raise SettingsError("k (tokens drafted per pass) must be between 1 and 16")
    target = load_model(folder, prefer="speed")[0]
    draft = load_model(folder, prefer="speed")[0].model
    nn.quantize(draft, group_size=64, bits=draft_bits)
    ids = _encode(target, prompt, settings)
    eos = set(target.tokenizer.eos_token_ids)
    if progress:
        progress("Running the target alone…", 0.0)
    plain, plain_s = plain_greedy(target.model, ids, tokens, eos)
    runs = []
    for n, k in enumerate(ks):
        if progress:
            progress(f"Speculative decoding, k = {k}…", (n + 1) / (len(ks) + 1))
        spec = speculative_greedy(target.model, draft, ids, k, tokens, eos)
        runs.append(
            {
                "k": k,
                "tokens": spec.tokens,
                "same_as_target": spec.tokens == plain,
                "drafted": spec.drafted,
                "accepted": spec.accepted,
                "rejected": spec.drafted - spec.accepted,
                "acceptance": spec.acceptance,
                "target_passes": len(spec.rounds) + 1,
                "tokens_per_pass": spec.tokens_per_pass,
                "seconds": spec.seconds,
                "speedup": plain_s / spec.seconds,
                "rounds": [
                    {
                        "drafted": r.drafted,
                        "accepted": r.accepted,
                        "correction": r.correction,
                        "draft_probs": r.draft_probs,
                        "target_probs": r.target_probs,
                    }
                    for r in spec.rounds
                ],
            }
        )
    words = set(plain) | {t for r in runs for rd in r["rounds"] for t in rd["drafted"]}
    return {
        "draft": f"the target re-quantized to {draft_bits}-bit",
        "target_alone_s": plain_s,
        "target_tokens": plain,
        "labels": {str(t): _label(target, t) for t in words},
        "runs": runs,
    }


def batching_experiment(
    folder: Path, settings, record, sizes=(1, 2, 4, 8), tokens: int = 16, progress=None
) -> dict:
    """The built-in prompt set at each batch size, with the device's ceiling: decode
    reads the weights once per step for the whole batch, so the bandwidth bound on
    total tokens/s grows with the batch until compute (2 x parameters FLOPs per
    token) caps it."""
    from engine.backends.mlx.lab_batch import PROMPTS, batch_experiment
    from engine.backends.mlx.loader import load_model

    if not sizes or not all(1 <= s <= 64 for s in sizes):
        raise SettingsError("batch sizes must be between 1 and 64")
    lm = load_model(folder, prefer="speed")[0]
    ids = [_encode(lm, p, settings) for p in PROMPTS]
    data = batch_experiment(lm, ids, tuple(sizes), tokens, progress)
    data["prompts"] = list(PROMPTS)
    data["unbatched_equal"] = {
        k: v == data["answers"][str(min(sizes))] for k, v in data["answers"].items()
    }
    if record is not None and record.weight_bytes and record.memory_gbs:
        bw = record.memory_gbs * 1e9 / record.weight_bytes  # steps/s if only weights limit
        flops = (record.matmul_gflops or 0) * 1e9 / (2 * (record.parameters or 1))
        data["ceiling"] = [
            {"batch_size": s, "tps": min(s * bw, flops) if flops else s * bw} for s in sizes
        ]
        data["ceiling_source"] = record.limits_source
    return data
