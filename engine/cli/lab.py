"""`logitscope lab <experiment>`: the lab's experiments on the command line, each run in
this process by the same function the Lab window reaches through the engine process
(engine/backends/mlx/lab_runs.run_experiment), on the same parameter dataclasses
(engine/lab/params.py). Each experiment's subparser and command are the ones
engine/lab/registry.py names; quant, batch, cache and speculative are here:

    logitscope lab quant --prompt TEXT [--model M] [--bits 8,6,4,3] [--tokens 24] [--json]
    logitscope lab speculative --prompt TEXT [--k 4] [--draft-bits 3 | --draft M] [--json]
    logitscope lab batch [--sizes 1,2,4,8] [--tokens 16] [--json]
    logitscope lab cache [--rounds 3] [--turns N] [--tokens 8] [--json]

(`lab distill` and `lab distill-train`: engine/cli/lab_distill.py; `lab calibrate`:
engine/cli/lab_calibrate.py; `lab route`: engine/cli/lab_route.py.)
`--json` prints the result's fields (engine/lab/results.py); `lab speculative`
adds its one run's fields at the top level, as before.
"""

from __future__ import annotations

import json
import sys

from engine.cli.args import MODEL_ARG
from engine.errors import SettingsError
from engine.lab import (
    COMMAND_CACHE,
    COMMAND_SPECULATIVE,
    BatchParams,
    BatchResult,
    CacheParams,
    CacheResult,
    QuantParams,
    QuantResult,
    SpeculativeParams,
    SpeculativeResult,
)
from engine.lab.registry import EXPERIMENTS, experiment, resolve

QUANT, BATCH, CACHE, SPEC = QuantParams(), BatchParams(), COMMAND_CACHE, COMMAND_SPECULATIVE


def _listed(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


def add_parser(sub) -> None:
    """Add the `lab` command and its experiments: each experiment's own subparser, as the
    registry names it (engine/lab/registry.py; defaults: engine/lab/params.py)."""
    lab = sub.add_parser("lab", help="inference technique experiments")
    kinds = lab.add_subparsers(dest="lab", required=True)
    for e in EXPERIMENTS.values():
        resolve(e.parser)(kinds)


def add_quant(kinds) -> None:
    """`lab quant`."""
    q = kinds.add_parser("quant", help="re-quantized variants against a float32 reference")
    _prompted(q)
    q.add_argument("--bits", default=_listed(QUANT.bits), help="comma-separated bit widths (2-8)")
    q.add_argument("--tokens", type=int, default=QUANT.tokens, help="answer tokens teacher-forced")


def add_batch(kinds) -> None:
    """`lab batch`."""
    b = kinds.add_parser("batch", help="the same prompts at batch sizes 1, 2, 4, 8")
    _model(b)
    b.add_argument("--sizes", default=_listed(BATCH.sizes), help="comma-separated batch sizes")
    b.add_argument("--tokens", type=int, default=BATCH.tokens, help="answer tokens per prompt")


def add_cache(kinds) -> None:
    """`lab cache`."""
    c = kinds.add_parser("cache", help="a conversation turn cold vs from the KV cache")
    _model(c)
    c.add_argument(
        "--rounds", type=int, default=CACHE.rounds, help="alternated rounds of each (best kept)"
    )
    c.add_argument("--tokens", type=int, default=CACHE.tokens, help="answer tokens per run")
    c.add_argument(
        "--turns",
        type=int,
        default=CACHE.turns,
        help="also grow a conversation, each turn cached and cold",
    )
    c.add_argument(
        "--prompt",
        default=CACHE.first,
        help="the conversation's first turn ('-' reads stdin)",
    )
    c.add_argument(
        "--kv-bits",
        default=_listed(CACHE.kv_bits),
        help="also compare float vs quantized KV caches, e.g. 8,4 (bytes, speed, per-token KL)",
    )


def add_speculative(kinds) -> None:
    """`lab speculative`."""
    sp = kinds.add_parser("speculative", help="a draft proposes, the target verifies (T = 0)")
    _prompted(sp)
    sp.add_argument("--draft", default=None, help="draft model (default: the target re-quantized)")
    sp.add_argument(
        "--draft-bits", type=int, default=SPEC.draft_bits, help="bits of the default draft"
    )
    sp.add_argument("--k", type=int, default=SPEC.ks[0], help="tokens drafted per target pass")
    sp.add_argument("--tokens", type=int, default=SPEC.tokens, help="answer tokens")


def _model(p) -> None:
    p.add_argument("--model", default=None, type=MODEL_ARG, help="MLX folder, .gguf file or name")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")


def _prompted(p) -> None:
    p.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    _model(p)
    p.add_argument("--raw", action="store_true", help="raw completion, no chat template")


def _numbers(text: str, option: str, example: str) -> tuple[int, ...]:
    """The comma-separated whole numbers of `option`, each once; an empty item (`4,,4`)
    or a repeated one is a typo, refused like a word."""
    refused = f"{option} takes whole numbers like {example}, each once, not {text!r}"
    items = [b.strip() for b in text.split(",")]
    try:
        numbers = tuple(int(b) for b in items)
    except ValueError:
        raise SettingsError(refused) from None
    if len(set(numbers)) != len(numbers):
        raise SettingsError(refused)
    return numbers


def cmd_lab(args) -> int:
    """Run a `logitscope lab` experiment in this process: the command the registry names
    for it (engine/lab/registry.py); the exit status."""
    return resolve(experiment(args.lab).command)(args)


def cmd_quant(args) -> int:
    """`lab quant`; the exit status."""
    from engine.cli.args import read_prompt

    args.prompt = read_prompt(args.prompt)  # checked as `generate` checks its prompt
    params = QuantParams(_numbers(args.bits, "--bits", "8,6,4,3"), args.tokens)
    return _measure(args, params, args.prompt, _print_quant)


def cmd_batch(args) -> int:
    """`lab batch`; the exit status."""
    params = BatchParams(_numbers(args.sizes, "--sizes", "1,2,4,8"), args.tokens)
    return _measure(args, params, "", _print_batch)


def cmd_cache(args) -> int:
    """`lab cache` (its first message is `--prompt`, in the parameters); the exit status."""
    from engine.cli.args import read_prompt

    args.prompt = read_prompt(args.prompt)
    kv = _numbers(args.kv_bits, "--kv-bits", "8,4") if args.kv_bits else ()
    params = CacheParams(
        turns=args.turns, tokens=args.tokens, rounds=args.rounds, first=args.prompt, kv_bits=kv
    )
    return _measure(args, params, "", _print_cache)


def cmd_speculative(args) -> int:
    """`lab speculative` (one k); the exit status."""
    from engine.cli.args import read_prompt

    args.prompt = read_prompt(args.prompt)
    params = SpeculativeParams((args.k,), args.draft_bits, args.tokens, args.draft)
    return _measure(args, params, args.prompt, _print_speculative, _flat_speculative)


def lab_record(model, progress):
    """Load `model` (a spec; None: the default) in this process as the engine loads it
    for the lab; its ModelRecord, for lab_runs.run_experiment (the runner loads its own
    copy from the record's folder, as in the engine process).

    Args:
        progress: the load's (message, fraction) callback, or None (silent).
    """
    from engine.backends.base import prepare_process

    prepare_process()  # an optimised BLAS before MLX loads, as in the engine process
    from engine.backends.mlx.backend import MLXBackend

    backend = MLXBackend()
    backend.prefer = "speed"  # as the engine runs the lab
    return backend.load(model, progress or (lambda m, f: None))


def _measure(args, params, prompt, printer, flat=None) -> int:
    """Run `params` in this process and print its result (`--json`: its fields, `flat`
    applied); the exit status."""
    from engine.run.settings import SamplingSettings

    settings = SamplingSettings(chat_template=not getattr(args, "raw", False)).validate()
    say = (lambda m, f: print(f"[{f:4.0%}] {m}", file=sys.stderr)) if not args.json else None
    record = lab_record(args.model, say)
    from engine.backends.mlx.lab_runs import run_experiment

    result = run_experiment(record, params, prompt, settings, say)
    if args.json:  # the dataclass becomes JSON here, at the edge
        out = result.to_dict()
        print(json.dumps(flat(out) if flat else out, ensure_ascii=False))
        return 0
    printer(result)
    return 0


def _flat_speculative(out: dict) -> dict:
    """One k on the command line: its run's fields at the top level too (as before)."""
    run = out["runs"][0]
    flat = {k: v for k, v in run.items() if k != "seconds"}
    return {**out, **flat, "speculative_s": run["seconds"]}


def _print_quant(result: QuantResult) -> None:
    print(
        f"{result.model}: reference = {result.reference}; "
        f"{len(result.answer_ids)} answer tokens teacher-forced"
    )
    print(
        f"{'model':26} {'MB':>7} {'mean KL':>9} {'top-1':>7} {'ppl':>7} {'prefill':>9} "
        f"{'decode':>8}"
    )
    for v in result.variants:
        print(
            f"{v.name:26} {v.weight_bytes / 1e6:7.0f} {v.mean_kl:9.4f} "
            f"{v.top1_agreement:7.1%} {v.perplexity:7.2f} {v.prefill_tps:7.0f}/s "
            f"{v.decode_tps:6.1f}/s"
        )


def _print_batch(result: BatchResult) -> None:
    for r in result.rows:
        print(
            f"batch {r.batch_size:2}: {r.total_tps:6.1f} tok/s total, "
            f"{r.per_sequence_tps:5.1f} per sequence, {r.seconds:.2f} s, "
            f"peak {r.peak_memory_bytes / 1e6:,.0f} MB"
        )


def _print_cache(result: CacheResult) -> None:
    if result.ratio is not None:
        print(f"turn 2: {result.prompt_tokens} prompt tokens, {result.cached_tokens} from cache")
        print(
            f"TTFT cold {result.cold_ttft_s:.3f} s, cached {result.cached_ttft_s:.3f} s: "
            f"{result.ratio:.1f}x faster; same tokens: {result.same_tokens} "
            f"(logprobs within {result.max_logprob_difference:.1e})"
        )
    for r in result.rows:
        print(
            f"turn {r.turn}: {r.prompt_tokens} prompt tokens, {r.cached_tokens} cached; "
            f"TTFT cold {r.cold_ttft_s:.3f} s, cached {r.cached_ttft_s:.3f} s "
            f"({r.speedup:.1f}x); KV cache {r.kv_cache_bytes / 1e6:.2f} MB"
        )
    for r in result.kv_precision:
        tps = f"{r.decode_tps:.1f} tok/s" if r.decode_tps else "decode not timed"
        print(
            f"KV {r.kv_bits or 'float'}{'-bit' if r.kv_bits else ''}: "
            f"{r.kv_cache_bytes:,} bytes ({r.bytes_per_token:,.0f} per token), {tps}, "
            f"KL to float mean {r.mean_kl:.2e} max {r.max_kl:.2e} nats, "
            f"same tokens: {r.same_tokens}"
        )


def _print_speculative(result: SpeculativeResult) -> None:
    run = result.runs[0]  # the command line runs one k
    # every k's output equals the target's greedy answer (same_as_target)
    print(f"target {result.target}, draft {result.draft}, k = {run.k}; its answer: {result.text!r}")
    print(
        f"drafted {run.drafted}, accepted {run.accepted} ({run.acceptance:.0%}), "
        f"{run.target_passes} target passes, {run.tokens_per_pass:.2f} tokens per pass"
    )
    print(
        f"speculative {run.seconds:.2f} s vs target alone {result.target_alone_s:.2f} s: "
        f"{run.speedup:.2f}x; output identical to the target's: {run.same_as_target}"
    )
