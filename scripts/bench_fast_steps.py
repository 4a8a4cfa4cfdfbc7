"""The engine's decode rate on fast steps against bare mlx-lm, in one process.

    python scripts/bench_fast_steps.py [ROUNDS] [--tokens 3,60]

The near-free model (the default model's vocabulary, one layer of width 64, random
weights: ~3 ms a step) takes decode.py's pipelined path, where a step stamped one
step late would halve a 3-token rate. This is the ratio tests/engine/test_fast_steps.py
asserted until a loaded machine turned it red (0.66 against a 0.67 bound): a speed is
a benchmark, the test now checks the stamps themselves. Best of ROUNDS for each side,
as the test did (noise only ever slows a run); results go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPT = "Write a long story about a dragon who learns to bake bread."


def main() -> None:
    """Run the rounds and print, per token count, each side's best rate and the ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("rounds", nargs="?", type=int, default=5)
    p.add_argument("--tokens", default="3,60", help="token counts, comma-separated")
    args = p.parse_args()
    from engine.backends.base import prepare_process

    prepare_process()
    from engine.backends.mlx.bench import bare_decode
    from engine.backends.mlx.generate import generate_records
    from engine.backends.mlx.loader import ensure_default_model, load_model
    from engine.backends.mlx.synthetic import build_near_free_model
    from engine.run.chat_template import apply
    from engine.run.settings import SamplingSettings

    with tempfile.TemporaryDirectory() as tmp:
        folder = build_near_free_model(Path(tmp) / "near-free", ensure_default_model())
        lm, _info, _status = load_model(folder, prefer="auto")
        text = apply(lm.tokenizer, [{"role": "user", "content": PROMPT}], True)
        for n in (int(x) for x in args.tokens.split(",")):
            settings = SamplingSettings(temperature=0, max_tokens=n, prompt_cache=False)
            ours, bare = [], []
            for _ in range(args.rounds):
                done = [r for r in generate_records(lm, PROMPT, settings) if r.type == "done"]
                ours.append(done[0].decode_tps or 0.0)
                bare.append(bare_decode(lm.model, lm.tokenizer, text, n)[0])
            print(
                f"{n:4} tokens: engine {max(ours):7.1f} tok/s, bare mlx-lm {max(bare):7.1f} "
                f"tok/s, ratio of bests {max(ours) / max(bare):.2f}"
            )


if __name__ == "__main__":
    main()
