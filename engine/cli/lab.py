"""`logitscope lab quant|cache|speculative|batch`: the lab's experiments on the
command line; `quant`, the quantization A/B, lives here.

    logitscope lab quant --prompt TEXT [--model M] [--bits 8,6,4,3] [--tokens 24] [--json]

The reference is the model dequantized to float32 (labelled with what it was
dequantized from); each variant is re-quantized from it at run time.
"""

from __future__ import annotations

import json
import sys

from engine.errors import SettingsError
from engine.settings import BIT_WIDTHS


def add_parser(sub) -> None:
    lab = sub.add_parser("lab", help="inference technique experiments")
    kinds = lab.add_subparsers(dest="lab", required=True)
    q = kinds.add_parser("quant", help="re-quantized variants against a float32 reference")
    q.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    q.add_argument("--model", default=None, help="MLX folder, .gguf file or name")
    q.add_argument("--bits", default="8,6,4,3", help="comma-separated bit widths (2-8)")
    q.add_argument("--tokens", type=int, default=24, help="answer tokens teacher-forced")
    q.add_argument("--raw", action="store_true", help="raw completion, no chat template")
    q.add_argument("--json", action="store_true", help="print the numbers as JSON")
    b = kinds.add_parser("batch", help="the same prompts at batch sizes 1, 2, 4, 8")
    b.add_argument("--model", default=None, help="MLX folder, .gguf file or name")
    b.add_argument("--sizes", default="1,2,4,8", help="comma-separated batch sizes")
    b.add_argument("--tokens", type=int, default=16, help="answer tokens per prompt")
    b.add_argument("--json", action="store_true", help="print the numbers as JSON")
    from engine.cli.lab_cache import add_parser as add_cache

    add_cache(kinds)
    sp = kinds.add_parser("speculative", help="a draft proposes, the target verifies (T = 0)")
    sp.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    sp.add_argument("--model", default=None, help="the target: MLX folder, .gguf file or name")
    sp.add_argument("--draft", default=None, help="draft model (default: the target re-quantized)")
    sp.add_argument("--draft-bits", type=int, default=3, help="bits of the default draft")
    sp.add_argument("--k", type=int, default=4, help="tokens drafted per target pass")
    sp.add_argument("--tokens", type=int, default=32, help="answer tokens")
    sp.add_argument("--raw", action="store_true", help="raw completion, no chat template")
    sp.add_argument("--json", action="store_true", help="print the numbers as JSON")


def _batch(args) -> int:
    from engine.backends.mlx.backend import MLXBackend
    from engine.backends.mlx.lab_runs import batching_experiment
    from engine.settings import SamplingSettings

    try:
        sizes = tuple(int(b) for b in args.sizes.split(","))
    except ValueError:
        raise SettingsError(
            f"--sizes takes whole numbers like 1,2,4,8, not {args.sizes!r}"
        ) from None
    backend = MLXBackend()
    record = backend.load(args.model, lambda m, f: None)
    from pathlib import Path

    out = batching_experiment(Path(record.path), SamplingSettings(), record, sizes, args.tokens)
    if args.json:
        print(json.dumps(out))
        return 0
    for r in out["rows"]:
        print(
            f"batch {r['batch_size']:2}: {r['total_tps']:6.1f} tok/s total, "
            f"{r['per_sequence_tps']:5.1f} per sequence, {r['seconds']:.2f} s, "
            f"peak {r['peak_memory_bytes'] / 1e6:,.0f} MB"
        )
    return 0


def _bits(text: str) -> tuple[int, ...]:
    try:
        bits = tuple(int(b) for b in text.split(",") if b.strip())
    except ValueError:
        raise SettingsError(f"--bits takes whole numbers like 8,6,4,3, not {text!r}") from None
    bad = [b for b in bits if b not in BIT_WIDTHS]
    if bad or not bits:
        raise SettingsError(f"MLX quantizes to 2, 3, 4, 5, 6 or 8 bits, not {bad or text!r}")
    return bits


def cmd_lab(args) -> int:
    from engine.backends.base import prepare_process

    prepare_process()
    if args.lab == "batch":
        return _batch(args)
    if args.lab == "cache":
        from engine.cli.lab_cache import cmd_cache

        return cmd_cache(args)
    if args.lab == "speculative":
        from engine.cli.lab_speculative import cmd_speculative

        return cmd_speculative(args)
    from engine.backends.mlx.lab_runs import quant_experiment
    from engine.backends.mlx.loader import resolve_model
    from engine.cli.args import read_prompt
    from engine.settings import SamplingSettings

    bits = _bits(args.bits)
    prompt = read_prompt(args.prompt)
    settings = SamplingSettings(chat_template=not args.raw).validate()
    say = (lambda m, f: print(f"[{f:4.0%}] {m}", file=sys.stderr)) if not args.json else None
    out = quant_experiment(resolve_model(args.model), prompt, settings, bits, args.tokens, say)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(
        f"{out['model']}: reference = {out['reference']}; "
        f"{len(out['answer_ids'])} answer tokens teacher-forced"
    )
    print(
        f"{'model':26} {'MB':>7} {'mean KL':>9} {'top-1':>7} {'ppl':>7} {'prefill':>9} "
        f"{'decode':>8}"
    )
    for v in out["variants"]:
        print(
            f"{v['name']:26} {v['weight_bytes'] / 1e6:7.0f} {v['mean_kl']:9.4f} "
            f"{v['top1_agreement']:7.1%} {v['perplexity']:7.2f} {v['prefill_tps']:7.0f}/s "
            f"{v['decode_tps']:6.1f}/s"
        )
    return 0
