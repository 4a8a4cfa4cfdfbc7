"""The engine's decode against bare mlx-lm on the same weights, in one process.

    python scripts/bench_same_weights.py [ROUNDS] [--model FOLDER] [--tokens N]

`logitscope bench` compares the engine (which may run a model dequantized to
float32) with bare mlx-lm on the weights as stored; this runs mlx-lm's own
`stream_generate` on exactly the model the engine runs (`LoadedModel.model`),
alternating with `generate_records`, greedy, the bench's chat prompt, no prompt
reuse: the ratio is the engine's own per-token cost on a real model.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    """Run the rounds and print each side's tok/s and the median ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("rounds", nargs="?", type=int, default=3)
    p.add_argument("--model", default=None)
    p.add_argument("--tokens", type=int, default=32)
    args = p.parse_args()
    from engine.backends.base import prepare_process

    prepare_process()
    from mlx_lm.utils import load_tokenizer

    from engine.backends.mlx.bench import BENCH_PROMPT, bare_decode
    from engine.backends.mlx.generate import generate_records
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.run.chat_template import apply
    from engine.run.series import decode_rate
    from engine.run.settings import SamplingSettings

    folder = resolve_model(args.model)
    lm, _info, _status = load_model(folder, prefer="auto")
    tokenizer = load_tokenizer(folder)
    text = apply(tokenizer, [{"role": "user", "content": BENCH_PROMPT}], True)
    settings = SamplingSettings(temperature=0, max_tokens=args.tokens, seed=0, prompt_cache=False)

    def engine() -> float:
        stamps = [
            time.perf_counter()
            for r in generate_records(lm, BENCH_PROMPT, settings)
            if r.type == "token"
        ]
        return decode_rate(stamps) or 0.0

    ours, bare = [], []
    for i in range(args.rounds):  # alternate who goes first
        for side in ("engine", "bare") if i % 2 == 0 else ("bare", "engine"):
            if side == "engine":
                ours.append(engine())
            else:
                bare.append(bare_decode(lm.model, tokenizer, text, args.tokens)[0])
    print(f"{folder.name}, the engine's path: {getattr(lm, 'compute', '')}")
    print("engine tok/s", [round(x, 2) for x in ours])
    print("bare   tok/s", [round(x, 2) for x in bare])
    print(f"ratio (medians) {statistics.median(ours) / statistics.median(bare):.3f}")


if __name__ == "__main__":
    main()
