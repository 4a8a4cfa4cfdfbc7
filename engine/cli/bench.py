"""`logitscope bench`: the instrumented engine against bare mlx-lm, in one run.

The same greedy prompt runs through `mlx_lm.stream_generate` in this process
(the measuring functions live in engine/backends/mlx/bench.py) and through the
engine process (EngineClient), alternating, several rounds; the report gives
each side's median decode and prefill tokens/s and their ratios.
"""

from __future__ import annotations

import json
import statistics
import time

from engine.cli.args import MODEL_ARG, named
from engine.run.series import decode_rate
from engine.run.settings import SamplingSettings


def add_parser(sub) -> None:
    """Add the `bench` command."""
    b = sub.add_parser("bench", help="instrumented engine vs bare mlx-lm decode speed")
    b.add_argument("--model", default=None, type=MODEL_ARG)
    b.add_argument("--max-tokens", type=int, default=48)
    b.add_argument("--rounds", type=int, default=3)
    b.add_argument(
        "--prefill-tokens",
        type=int,
        default=128,
        metavar="N",
        help="length of the raw prompt the prefill figure is measured on",
    )
    b.add_argument("--json", action="store_true")
    b.add_argument(
        "--vs",
        default=None,
        type=named("a server's address"),
        metavar="URL",
        help="also run an OpenAI-compatible server (e.g. llama-server) on the same raw "
        "prompt, alternating: prefill, decode, TTFT and whether the greedy tokens agree",
    )
    b.add_argument(
        "--remote-model",
        default=None,
        type=named("the server's model name"),
        metavar="NAME",
        help="the server's model",
    )
    b.add_argument(
        "--synthetic",
        action="store_true",
        help="a near-free model (the default model's vocabulary, 1 layer of width 64, "
        "random weights): measures the engine's own per-token cost",
    )


MAX_ROUNDS = 100  # a best-of-N figure; more rounds only take longer
MAX_BENCH_TOKENS = 32_768  # beyond any default model's context


def cmd_bench(args) -> int:
    """Run `logitscope bench`: print the report (as JSON with --json); returns 0."""
    from engine.backends.base import prepare_process
    from engine.errors import SettingsError

    for name, value, least, most in (
        ("--rounds", args.rounds, 1, MAX_ROUNDS),
        ("--max-tokens", args.max_tokens, 2, MAX_BENCH_TOKENS),
        ("--prefill-tokens", args.prefill_tokens, 2, MAX_BENCH_TOKENS),
    ):
        if not least <= value <= most:  # 10**11 prompt tokens: a MemoryError before
            raise SettingsError(f"{name} must be from {least} to {most:,} (got {value:,})")
    # The bare side gets the engine process's BLAS (OpenBLAS on MLX's CPU build): the
    # comparison is of the engine's own work, on the same matrix products.
    prepare_process()
    if args.vs:
        from engine.cli.bench_vs import format_vs, run_vs

        report = run_vs(args.vs, args.remote_model, args.model, args.max_tokens, args.rounds)
        print(json.dumps(report, indent=2) if args.json else format_vs(report))
        return 0
    if args.synthetic:
        report = run_synthetic(args.model, args.max_tokens, args.rounds, args.prefill_tokens)
    else:
        report = run_bench(args.model, args.max_tokens, args.rounds, args.prefill_tokens)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def _engine(client, prompt: str, settings: SamplingSettings, model: str):
    stamps, ids, done, record_model = [], [], None, None
    for record in client.generate(prompt, settings, model):
        if record.type == "token":
            stamps.append(time.perf_counter())
            ids.append(record.token_id)
        elif record.type == "done":
            done = record
        elif record.type == "model":
            record_model = record
        elif record.type == "error":
            from engine.errors import LogitscopeError

            raise LogitscopeError(record.message)
    return decode_rate(stamps) or 0.0, ids, done, record_model


def run_bench(
    model: str | None, max_tokens: int = 48, rounds: int = 3, prefill_tokens: int = 128
) -> dict:
    """Alternate bare and engine runs; return the figures as a plain dict."""
    from engine.backends.mlx.bench import (
        BENCH_PROMPT,
        bare_decode,
        bare_prefill,
        bare_setup,
    )
    from engine.backends.mlx.loader import device_name, resolve_model
    from engine.process.client import EngineClient

    folder = resolve_model(model)
    bare_model, tokenizer, prompt_text, long_text, long_ids = bare_setup(folder, prefill_tokens)
    # No prompt reuse: every timed run prefills its whole prompt.
    settings = SamplingSettings(temperature=0.0, max_tokens=max_tokens, seed=0, prompt_cache=False)
    pre_settings = SamplingSettings(
        temperature=0.0, max_tokens=2, seed=0, chat_template=False, prompt_cache=False
    )
    spec = str(folder)
    client = EngineClient()
    try:
        _, _, _, record = _engine(client, BENCH_PROMPT, settings.with_(max_tokens=4), spec)
        # warm-up both; the bare side on the short raw prompt: its first prefill and
        # decode steps are what warming needs, and on a CPU the stored weights prefill
        # the whole chat prompt at ~10 tokens/s (seconds spent measuring nothing)
        bare_decode(bare_model, tokenizer, BENCH_PROMPT, 2)
        bare, engine, bare_pre, engine_pre = [], [], [], []
        same = True
        for _ in range(rounds):
            b, b_ids = bare_decode(bare_model, tokenizer, prompt_text, max_tokens)
            e, e_ids, _, _ = _engine(client, BENCH_PROMPT, settings, spec)
            same = same and b_ids == e_ids[: len(b_ids)]
            bare.append(b)
            engine.append(e)
            bare_pre.append(bare_prefill(bare_model, tokenizer, long_ids))
            engine_pre.append(_engine(client, long_text, pre_settings, spec)[2].prefill_tps or 0)
    finally:
        client.close()
    b, e = statistics.median(bare), statistics.median(engine)
    bp, ep = statistics.median(bare_pre), statistics.median(engine_pre)
    return {
        "model": folder.name,
        "device": device_name(),
        "engine_path": record.compute if record else "",
        "max_tokens": max_tokens,
        "rounds": rounds,
        "bare_decode_tps": b,
        "engine_decode_tps": e,
        "ratio": e / b if b else 0.0,
        "prefill_prompt_tokens": len(long_ids),
        "bare_prefill_tps": bp,
        "engine_prefill_tps": ep,
        "prefill_ratio": ep / bp if bp else 0.0,
        "same_greedy_tokens": same,
        # speed against the limit: decode reads every weight once per token, prefill
        # does about 2 x parameters FLOPs per token
        "engine_decode_gbs": e * (record.weight_bytes or 0) / 1e9 if record else None,
        "engine_prefill_gflops": ep * 2 * (record.parameters or 0) / 1e9 if record else None,
        "memory_gbs_limit": record.memory_gbs if record else None,
        "matmul_gflops_limit": record.matmul_gflops if record else None,
        "bare_runs": bare,
        "engine_runs": engine,
        "bare_prefill_runs": bare_pre,
        "engine_prefill_runs": engine_pre,
    }


def run_synthetic(
    model: str | None, max_tokens: int, rounds: int, prefill_tokens: int = 128
) -> dict:
    """`run_bench` on the near-free model built from `model`'s tokenizer (the default
    model's by default), with the engine's per-token overhead in microseconds."""
    import tempfile
    from pathlib import Path

    from engine.backends.mlx.loader import resolve_model
    from engine.backends.mlx.synthetic import build_near_free_model

    source = resolve_model(model)
    with tempfile.TemporaryDirectory(prefix="logitscope-synthetic-") as tmp:
        folder = build_near_free_model(Path(tmp) / "near-free", source)
        report = run_bench(str(folder), max_tokens, rounds, prefill_tokens)
    b, e = report["bare_decode_tps"], report["engine_decode_tps"]
    report["synthetic"] = True
    report["overhead_us_per_token"] = (1 / e - 1 / b) * 1e6 if b and e else None
    return report


def format_report(r: dict) -> str:
    """The bench report as text for people."""
    return (
        f"{r['model']} on {r['device']}, {r['max_tokens']} tokens x {r['rounds']} rounds\n"
        f"  engine path        {r['engine_path']}\n"
        f"  decode   bare mlx-lm {r['bare_decode_tps']:7.2f} tok/s · Logitscope "
        f"{r['engine_decode_tps']:7.2f} tok/s · ratio {r['ratio']:.2f}\n"
        f"  prefill  bare mlx-lm {r['bare_prefill_tps']:7.2f} tok/s · Logitscope "
        f"{r['engine_prefill_tps']:7.2f} tok/s · ratio {r['prefill_ratio']:.2f} "
        f"({r['prefill_prompt_tokens']} tokens)\n"
        f"  same greedy tokens {r['same_greedy_tokens']}\n"
        f"  engine decode {r['engine_decode_gbs'] or 0:.1f} GB/s of a measured "
        f"{r['memory_gbs_limit'] or 0:.0f} GB/s · prefill {r['engine_prefill_gflops'] or 0:.0f} "
        f"GFLOP/s of a measured {r['matmul_gflops_limit'] or 0:.0f} GFLOP/s"
    )
