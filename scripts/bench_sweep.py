"""The temperature sweep of one step on the CPU: MLX's pass per temperature over the
vocabulary against NumPy's (engine/backends/mlx/host_sweep.py), in one run.

    python scripts/bench_sweep.py [--rows 16] [--repeat 5]

For a vocabulary of SmolLM2's size (49,152) and of Gemma 3's (262,144): log Z(T) and
H(T) at the 20 sweep temperatures of `--rows` log-probability rows (random logits with a
peaked head, as a language model's), each way, and how far each is from a float64
computation. Reads and journaled question runs took MLX's way on the CPU until
2026-12-07; generation already took NumPy's. Results go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rows(vocab: int, n: int, seed: int = 0):
    """`n` float32 log-probability rows over `vocab` tokens, a few likely, most not."""
    import numpy as np

    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, (n, vocab)).astype(np.float32)
    logits[:, :8] += rng.uniform(6.0, 12.0, (n, 8)).astype(np.float32)
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted.astype(np.float64)).sum(-1, keepdims=True))


def exact(row):
    """log Z(T) and H(T) in float64."""
    import numpy as np

    from engine.run.records import SWEEP_TEMPERATURES

    t = np.array(SWEEP_TEMPERATURES)[:, None]
    scaled = row.astype(np.float64)[None, :] / t
    logz = np.logaddexp.reduce(scaled, axis=-1)
    p = np.exp(scaled - logz[:, None])
    return logz, logz - (p * scaled).sum(-1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from engine.backends.mlx.fast_blas import enable

    enable()
    import mlx.core as mx
    import numpy as np

    from engine.backends.mlx.host_sweep import temperature_sweep_np
    from engine.backends.mlx.instrument import temperature_sweep

    print("| vocabulary | MLX ms/row | NumPy ms/row | ratio | MLX max error | NumPy max error |")
    print("| --- | --- | --- | --- | --- | --- |")
    for vocab in (49_152, 262_144):
        lp = rows(vocab, args.rows).astype(np.float32)
        device = [mx.array(r) for r in lp]
        mx.eval(device)
        best = {"mlx": float("inf"), "numpy": float("inf")}
        for _ in range(args.repeat):  # the two ways alternate: the machine's load hits both
            t = time.perf_counter()
            got_mlx = [temperature_sweep(r) for r in device]
            mx.eval(got_mlx)
            best["mlx"] = min(best["mlx"], time.perf_counter() - t)
            t = time.perf_counter()
            got_np = [temperature_sweep_np(r) for r in lp]
            best["numpy"] = min(best["numpy"], time.perf_counter() - t)
        err_mlx = err_np = 0.0
        for r, (mz, mh), (nz, nh) in zip(lp, got_mlx, got_np, strict=True):
            ez, eh = exact(r)
            err_mlx = max(err_mlx, np.abs(np.array(mz) - ez).max(), np.abs(np.array(mh) - eh).max())
            err_np = max(err_np, np.abs(np.array(nz) - ez).max(), np.abs(np.array(nh) - eh).max())
        per = {k: v / args.rows * 1000 for k, v in best.items()}
        print(
            f"| {vocab:,} | {per['mlx']:.1f} | {per['numpy']:.2f} | "
            f"{per['mlx'] / per['numpy']:.0f}x | {err_mlx:.1e} | {err_np:.1e} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
