"""Reading a long text: host memory per chunk and tokens per second, in one process.

    python scripts/bench_read.py [--tokens 10000] [--no-sweep] [--prefer speed|memory|auto]

Reads a text of about TOKENS tokens (the README, repeated) with the default model, as
the engine process does (engine/backends/mlx/read_pass.py), consuming each record and
dropping it, so what is measured is what the read itself holds. Per chunk (between two
progress calls): the peak of Python's own allocations (tracemalloc: lists, records,
the byte table's lookups) and MLX's peak memory (the device's buffers: on the CPU they
live in the same RAM, so both are host memory there); over the whole read, the
process's resident set before and after. Results go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_bytes() -> int:
    """The process's resident set (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def long_text(lm, tokens: int) -> str:
    """The README repeated until it is at least `tokens` tokens, cut to about that."""
    base = (ROOT / "README.md").read_text(encoding="utf-8")
    text = base
    while len(lm.tokenizer.encode(text, add_special_tokens=False)) < tokens:
        text += "\n\n" + base
    ids = lm.tokenizer.encode(text, add_special_tokens=False)[:tokens]
    return lm.tokenizer.decode(ids)


def main() -> None:
    """Read the text once and print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=10_000)
    p.add_argument("--no-sweep", action="store_true", help="skip the temperature sweep")
    p.add_argument("--prefer", default="speed", choices=["speed", "memory", "auto"])
    args = p.parse_args()
    from engine.backends.base import prepare_process

    blas = prepare_process()
    import mlx.core as mx

    from engine.backends.mlx.loader import ensure_default_model, load_model
    from engine.backends.mlx.read_pass import plan_read, read_records
    from engine.reading.request import ReadRequest

    lm, _info, _s = load_model(ensure_default_model(), prefer=args.prefer)
    text = long_text(lm, args.tokens)
    request = ReadRequest(text, sweep=not args.no_sweep)
    plan = plan_read(lm, request)
    print(f"model: {lm.compute} ({blas})")
    print(
        f"text: {len(plan.ids) - plan.n_context:,} tokens, {len(text.encode()):,} bytes; "
        f"chunk {plan.chunk} tokens; context {lm.context_length:,}; "
        f"window {plan.window or 'none'} (keep {plan.keep or '-'})"
    )
    py_peaks, mlx_peaks, chunk_s = [], [], []
    last = [time.perf_counter()]

    def progress(done: int, total: int) -> None:
        """One chunk done: note its peaks and time, start the next chunk's count."""
        py_peaks.append(tracemalloc.get_traced_memory()[1])
        mlx_peaks.append(mx.get_peak_memory())
        now = time.perf_counter()
        chunk_s.append(now - last[0])
        last[0] = now
        tracemalloc.reset_peak()
        mx.reset_peak_memory()

    rss0, weights = rss_bytes(), mx.get_active_memory()  # the model's own buffers
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    done = None
    for record in read_records(lm, request, progress=progress):
        if record.type == "done":
            done = record
    seconds = time.perf_counter() - t0
    tracemalloc.stop()
    rss1 = rss_bytes()
    s = done.reading
    mb = 1e6
    print(
        f"read {s.tokens:,} tokens in {seconds:.1f} s: {s.tokens / seconds:,.1f} tokens/s "
        f"(sweep {'off' if args.no_sweep else 'on'}); perplexity {s.perplexity:.3f}, "
        f"{s.bits_per_byte:.4f} bits/byte"
    )
    print(
        f"per chunk ({len(py_peaks)} chunks): Python allocations peak "
        f"{(max(py_peaks) - base) / mb:.2f} MB above the start (median "
        f"{(sorted(py_peaks)[len(py_peaks) // 2] - base) / mb:.2f} MB); MLX buffers peak "
        f"{(max(mlx_peaks) - weights) / mb:.1f} MB above the weights' {weights / mb:.0f} MB "
        f"(median {(sorted(mlx_peaks)[len(mlx_peaks) // 2] - weights) / mb:.1f} MB); "
        f"slowest chunk {max(chunk_s):.2f} s (the longest wait for a cancel)"
    )
    print(f"resident set: {rss0 / mb:,.0f} MB before, {rss1 / mb:,.0f} MB after")


if __name__ == "__main__":
    main()
