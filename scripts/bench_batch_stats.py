"""The cost of one batch step's statistics (engine/serve/batch_stats.py) against the
former per-request graphs, on random (8, 49,152) logits: milliseconds per step.

    .venv/bin/python scripts/bench_batch_stats.py
"""

from __future__ import annotations

import time

from engine.backends.base import prepare_process

ROWS, VOCAB, REPS = 8, 49_152, 5


def main() -> None:
    prepare_process()  # as the server runs
    import mlx.core as mx

    from engine.backends.mlx.instrument import make_step_sampler, unpack
    from engine.run.settings import SamplingSettings
    from engine.serve.batch_stats import RowSampler, StepBatch, batch_step

    logits = mx.random.normal((ROWS, VOCAB), key=mx.random.key(0)) * 3  # (B, V)
    lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    mx.eval(lp)
    cases = {
        "greedy": SamplingSettings(temperature=0),
        "T=0.8": SamplingSettings(temperature=0.8, seed=1),
        "T=0.8, top-p 0.9": SamplingSettings(temperature=0.8, top_p=0.9, seed=1),
    }
    for name, s in cases.items():
        rows = [RowSampler(s, VOCAB, mx.random.key(i), None) for i in range(ROWS)]
        graph = host = old = float("inf")
        step = make_step_sampler(s, VOCAB, sweep_on_device=False)
        for _ in range(REPS):  # best of REPS: the machine is shared
            t = time.perf_counter()
            tokens, packed, raw = batch_step(rows, lp)
            mx.eval(tokens, packed, raw)
            t1 = time.perf_counter()
            batch = StepBatch(packed, raw, [r.n for r in rows], [r.temp == 0 for r in rows])
            for i in range(ROWS):
                batch.stats(i)
            t2 = time.perf_counter()
            outs = []
            for i in range(ROWS):  # the former way: one graph and one read per request
                token, p, _raw = step(lp[i : i + 1], None, None)
                mx.async_eval(token, p)
                outs.append(p)
            for p in outs:
                unpack(p.tolist(), step.n)
            t3 = time.perf_counter()
            graph, host, old = min(graph, t1 - t), min(host, t2 - t1), min(old, t3 - t2)
        print(
            f"{name}: batched graph {graph * 1e3:.1f} ms + host {host * 1e3:.1f} ms "
            f"(sweep, float64 entropies); per-request graphs {old * 1e3:.1f} ms (no sweep)"
        )


if __name__ == "__main__":
    main()
