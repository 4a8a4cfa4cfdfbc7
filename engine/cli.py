"""The `logitscope` command line: generate, models, bench.

Every user mistake ends with one line `logitscope: error: ...` on stderr and a
non-zero exit (2 for bad arguments, 1 for a run that failed), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from engine.errors import LogitscopeError, SettingsError
from engine.settings import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_P,
    DEFAULT_REPETITION_PENALTY,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_K,
    DEFAULT_TOP_N,
    DEFAULT_TOP_P,
    SamplingSettings,
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="logitscope", description="Make LLM inference visible.")
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="run one prompt and stream the answer")
    g.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    g.add_argument("--model", default=None, help="MLX folder, .gguf file or name")
    g.add_argument("--temp", type=float, default=DEFAULT_TEMPERATURE, help="0 = greedy")
    g.add_argument("--top-p", type=float, default=DEFAULT_TOP_P)
    g.add_argument("--top-k", type=int, default=DEFAULT_TOP_K)
    g.add_argument("--min-p", type=float, default=DEFAULT_MIN_P)
    g.add_argument("--repetition-penalty", type=float, default=DEFAULT_REPETITION_PENALTY)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    g.add_argument("--stop", action="append", default=[], help="stop string (repeat)")
    g.add_argument("--system", default=None, help="system prompt")
    g.add_argument("--raw", action="store_true", help="raw completion, no chat template")
    g.add_argument("--top-n", type=int, default=DEFAULT_TOP_N, help="alternatives kept")
    g.add_argument("--json", action="store_true", help="one JSON record per line")

    m = sub.add_parser("models", help="list the models Logitscope can open")
    m.add_argument("--json", action="store_true")
    m.add_argument(
        "--fetch-default", action="store_true",
        help="download and convert the default model first if it is missing",
    )  # fmt: skip

    b = sub.add_parser("bench", help="instrumented engine vs bare mlx-lm decode speed")
    b.add_argument("--model", default=None)
    b.add_argument("--max-tokens", type=int, default=48)
    b.add_argument("--rounds", type=int, default=3)
    b.add_argument("--json", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"generate": cmd_generate, "models": cmd_models, "bench": cmd_bench}[args.command](
            args
        )
    except LogitscopeError as e:
        print(f"logitscope: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, SettingsError) else 1
    except KeyboardInterrupt:
        print("logitscope: interrupted", file=sys.stderr)
        return 130


def _settings(args) -> SamplingSettings:
    return SamplingSettings(
        temperature=args.temp,
        top_p=args.top_p,
        top_k=args.top_k,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        max_tokens=args.max_tokens,
        seed=args.seed,
        stop=tuple(args.stop),
        system_prompt=args.system,
        chat_template=not args.raw,
        top_n=args.top_n,
    ).validate()


def cmd_generate(args) -> int:
    from engine.client import EngineClient
    from engine.records import to_dict

    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        raise SettingsError("the prompt is empty: pass some text with --prompt")
    settings = _settings(args)
    client = EngineClient()
    status = 0
    try:
        for record in client.generate(prompt, settings, args.model):
            if args.json:
                print(json.dumps(to_dict(record), ensure_ascii=False), flush=True)
            else:
                _print_plain(record)
            if record.type == "error":
                if not args.json:
                    print(f"logitscope: error: {record.message}", file=sys.stderr)
                status = 2 if record.kind == "settings" else 1
    finally:
        client.close()
    return status


def _print_plain(record) -> None:
    if record.type == "token":
        sys.stdout.write(record.text)
        sys.stdout.flush()
    elif record.type == "progress":
        print(f"[{record.fraction:4.0%}] {record.message}", file=sys.stderr)
    elif record.type == "done":
        sys.stdout.write("\n")
        print(
            f"[{record.finish_reason}] {record.generated_tokens} tokens, "
            f"TTFT {record.ttft_s:.2f} s, prefill {record.prefill_tps:.1f} tok/s, "
            f"decode {record.decode_tps:.1f} tok/s, "
            f"peak {record.peak_memory_bytes / 1e6:.0f} MB",
            file=sys.stderr,
        )


def cmd_models(args) -> int:
    from dataclasses import asdict

    from engine.default_model import ensure_default_model
    from engine.models import list_models

    if args.fetch_default:
        ensure_default_model(lambda msg, f: print(f"[{f:4.0%}] {msg}", file=sys.stderr, flush=True))
    models = list_models()
    if args.json:
        print(json.dumps([asdict(m) for m in models], indent=2))
        return 0
    if not models:
        print("No models yet: the default model is fetched on first use "
              "(or run 'logitscope models --fetch-default').")  # fmt: skip
    for m in models:
        print(
            f"{m.name:32} {m.quantization:18} {m.size_bytes / 1e6:7.0f} MB "
            f"ctx {m.context_length:6}  {m.path}"
        )
    return 0


def cmd_bench(args) -> int:
    from engine.bench import format_report, run_bench

    report = run_bench(args.model, args.max_tokens, args.rounds)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
