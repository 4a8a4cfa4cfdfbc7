"""The lab's experiments as the engine runs them, for the Lab window and the command
line alike: `run_experiment` takes the model, the prompt and settings and one of
engine.lab's parameter dataclasses (validated there), finds its runner in the registry
(engine/lab/registry.py) and returns its result dataclass (engine/lab/results.py). The
runners of quant, speculative, batch, cache and route are here; distillation's are in
distill_runs.py, calibrate's in calibrate_runs.py."""

from __future__ import annotations

from pathlib import Path

import mlx.nn as nn

from engine.errors import SettingsError
from engine.lab import (
    BatchParams,
    BatchResult,
    CacheParams,
    CacheResult,
    LabParams,
    LabResult,
    QuantParams,
    QuantResult,
    SpeculativeParams,
    SpeculativeResult,
)
from engine.lab.registry import experiment_of, resolve
from engine.lab.results import QuantVariant, SpeculativeRun


def run_experiment(record, params: LabParams, prompt, settings, progress=None) -> LabResult:
    """Run one experiment on the loaded model `record` (a ModelRecord): the runner the
    registry names for `params` (engine/lab/registry.py).

    Args:
        record: the model (its folder is `record.path`; its limits feed the ceilings).
        params: one experiment's parameters, e.g. QuantParams, CalibrateParams (a question
            set: progress per question, cancel between questions, the partial result on
            cancel) or RouteParams (it names both its models; the Lab passes the loaded
            one as `small`: route_runs.measure_route loads each in turn, `record` is not
            used).
        prompt: the prompt text or chat messages (the cache experiment's first message
            comes from `params.first`).
        settings: the prompt's settings (chat template, system prompt).
        progress: (message, fraction) callback or a LabReporter, or None.

    Returns:
        the experiment's result dataclass.

    Raises:
        SettingsError: `params` is no experiment's parameters.
    """
    runner = resolve(experiment_of(params).runner)
    return runner(record, params, prompt, settings, progress)


def _encode(lm, prompt, settings) -> list[int]:
    from engine.run.prompt import encode_prompt

    return encode_prompt(lm.tokenizer, prompt, settings).ids


def _label(lm, tid: int) -> str:
    from engine.run.records import token_label

    return token_label(lm.token_bytes(int(tid)))


def installed_variants(folder: Path, info, vocab_size: int, quantized: bool) -> list:
    """(key, name, load) of the model as installed (when the reference is dequantized
    from it) and of other installed models that are the same model: same architecture,
    parameter count and vocabulary."""
    from engine.backends.mlx.loader import load_model
    from engine.models.catalogue import list_models

    out = []
    if quantized:
        out.append(
            (
                "installed:" + info.name,
                f"{info.quantization}{_scales(folder)}, as installed",
                lambda: load_model(folder)[0].model,
            )
        )
    for other in list_models(other_tools=False):
        same = (
            other.architecture == info.architecture
            and other.parameters == info.parameters
            and Path(other.path).resolve() != Path(folder).resolve()
        )
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


def quant_experiment(record, params: QuantParams, prompt, settings, progress=None) -> QuantResult:
    """Re-quantized and installed variants of the model of `record` against its reference."""
    from engine.backends.mlx.lab_quant import run_quant_lab
    from engine.backends.mlx.loader import load_model
    from engine.models.catalogue import inspect_model

    folder = Path(record.path)
    bits, tokens = params.bits, params.tokens
    info = inspect_model(folder)
    lm = load_model(folder, prefer="speed")[0]
    ids = _encode(lm, prompt, settings)

    unused = [lm.model]  # the copy loaded for the tokenizer is the untouched reference

    def load_reference():
        """The model (speed path): first the one already loaded (the reference, never
        changed), then a fresh copy for each variant to re-quantize."""
        return unused.pop() if unused else load_model(folder, prefer="speed")[0].model

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
    return QuantResult(
        model=info.name,
        reference=reference,
        answer_ids=tuple(answer),
        answer=tuple(_label(lm, t) for t in answer),
        labels={str(t): _label(lm, t) for t in words},
        top=tops,
        variants=tuple(
            QuantVariant(
                name=v.name,
                key=v.key,
                bits=v.bits,
                weight_bytes=v.weight_bytes,
                mean_kl=v.mean_kl,
                top1_agreement=v.agreement,
                perplexity=v.perplexity,
                prefill_tps=v.prefill_tps,
                decode_tps=v.decode_tps,
                kl=tuple(v.kl),
                agree=tuple(v.agree),
                delta_logprob=tuple(v.delta_logprob),
            )
            for v in variants
        ),
    )


def speculative_experiment(
    record, params: SpeculativeParams, prompt, settings, progress=None
) -> SpeculativeResult:
    """Speculative decoding at each k against the target (the model of `record`)
    decoding alone.

    Raises:
        SettingsError: the draft model's vocabulary differs from the target's.
    """
    from engine.backends.mlx.lab_speculative import plain_greedy, speculative_greedy
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.backends.mlx.quantized_blas import blas_products

    folder = Path(record.path)
    ks, tokens = params.ks, params.tokens
    target = load_model(folder, prefer="speed")[0]
    if params.draft:
        other = load_model(resolve_model(params.draft), prefer="speed")[0]
        if other.vocab_size != target.vocab_size:
            raise SettingsError(
                "the draft's vocabulary differs from the target's: it must share it"
            )
        draft, draft_label = other.model, str(params.draft)
    else:
        draft = load_model(folder, prefer="speed")[0].model
        nn.quantize(draft, group_size=64, bits=params.draft_bits)
        blas_products(draft)  # its k-token checks on BLAS (quantized_blas.py)
        draft_label = f"the target re-quantized to {params.draft_bits}-bit"
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
    return SpeculativeResult(
        target=folder.name,
        draft=draft_label,
        target_alone_s=plain_s,
        target_tokens=tuple(plain),
        labels={str(t): _label(target, t) for t in words},
        runs=tuple(SpeculativeRun.from_dict(r) for r in runs),
        text=target.tokenizer.decode(plain),
    )


def batching_experiment(
    record, params: BatchParams, prompt, settings, progress=None
) -> BatchResult:
    """The same prompts at each batch size, with the device's ceiling: decode reads the
    weights once per step for the whole batch, so the bandwidth bound on total tokens/s
    grows with the batch until compute (2 x parameters FLOPs per token) caps it.

    The prompts are the first of the built-in set, as many as the largest batch holds
    (all eight at the default sizes): the largest size answers them in one batch, each
    smaller size in turns. More would only repeat every size's work (sizes 1 and 4 on
    eight prompts ran twelve batches where six give the same comparison)."""
    from engine.backends.mlx.lab_batch import PROMPTS, batch_experiment
    from engine.backends.mlx.loader import load_model

    folder = Path(record.path)
    sizes, tokens = params.sizes, params.tokens
    prompts = PROMPTS[: max(sizes)]
    lm = load_model(folder, prefer="speed")[0]
    ids = [_encode(lm, p, settings) for p in prompts]
    data = batch_experiment(lm, ids, tuple(sizes), tokens, progress)
    data["prompts"] = list(prompts)
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
    return BatchResult.from_dict(data)


def cache_experiment(record, params: CacheParams, prompt, settings, progress=None) -> CacheResult:
    """A conversation grown turn by turn (each cached, then cold) and, with rounds,
    turn 2 behind a long system prompt alternated cold and cached (its first message is
    `params.first`, not `prompt`)."""
    from engine.backends.mlx import lab_cache
    from engine.backends.mlx.loader import load_model
    from engine.run.prompt import check_text

    folder = Path(record.path)
    lm = load_model(folder, prefer="speed")[0]
    data: dict = {"rows": (), "compute": lm.compute, "context_length": lm.context_length}
    if params.rounds:
        data.update(lab_cache.cache_experiment(lm, tokens=params.tokens, rounds=params.rounds))
    if params.turns:
        first = check_text(params.first)
        data.update(
            lab_cache.conversation_experiment(
                lm, first, params.turns, params.tokens, settings.system_prompt, progress
            )
        )
    if params.kv_bits:
        from engine.backends.mlx.lab_kv import kv_precision_experiment

        if progress:
            progress("Float vs quantized KV cache…", 0.9)
        first = check_text(params.first)
        data["kv_precision"] = kv_precision_experiment(
            lm, first, params.tokens, params.kv_bits, settings.system_prompt
        )
    return CacheResult.from_dict(data)


def route_experiment(record, params, prompt, settings, progress=None):
    """The route experiment: both models named in `params` (a RouteParams) answer the
    question set and the cascade is measured at every threshold (route_runs.measure_route),
    or with a `threshold`, the cascade at it (route_runs.run_cascade); `record`, `prompt`
    and `settings` are not used (each model is loaded in turn, or asked on its server)."""
    from engine.backends.mlx.route_runs import measure_route, run_cascade

    run = measure_route if params.threshold is None else run_cascade
    return run(params, progress)
