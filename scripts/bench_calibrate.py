"""`lab calibrate`'s questions per minute: one batched pass per question (the greedy row
and N samples together, the prompt prefilled once) against one-by-one (1 + N single-row
passes, each prefilling the prompt), alternating, in one process. The one-by-one rows
are greedy (they stop as soon as the answer does; sampled rows often run longer), so
the ratio understates what batching saves.

    python scripts/bench_calibrate.py [--questions 20] [--samples 5] [--rounds 2]

Both sides answer the same first questions of the bundled set on the default model
(float32 path); the best round of each is kept (noise only slows a run). Results go to
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    """Print each side's best questions per minute and the ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--samples", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    from engine.backends.mlx.fast_blas import enable

    enable()
    import mlx.core as mx

    from engine.backends.mlx import calibrate as c
    from engine.backends.mlx.loader import ensure_default_model, load_model
    from engine.lab.questions import load_questions

    lm = load_model(ensure_default_model(), prefer="speed")[0]
    questions = load_questions()[: args.questions]
    stops = c.stop_ids(lm)
    prompts = [c.question_ids(lm, q.question) for q in questions]

    def batched() -> None:
        for ids in prompts:
            c.answer_batch(lm, ids, args.samples, 1.0, 12, mx.random.key(0), stops)

    def one_by_one() -> None:
        for ids in prompts:
            for _ in range(1 + args.samples):
                c.answer_batch(lm, ids, 0, 1.0, 12, mx.random.key(0), stops)

    best = {"batched": 0.0, "one by one": 0.0}
    for _ in range(args.rounds):
        for name, run in (("batched", batched), ("one by one", one_by_one)):
            t = time.perf_counter()
            run()
            best[name] = max(best[name], len(prompts) / (time.perf_counter() - t) * 60)
    print(f"{lm.compute.split(':')[0]}, {len(prompts)} questions, {args.samples} samples each")
    for name, qpm in best.items():
        print(f"  {name:<11} {qpm:6.1f} questions/min")
    print(f"  batched / one by one: {best['batched'] / best['one by one']:.2f}x")


if __name__ == "__main__":
    main()
