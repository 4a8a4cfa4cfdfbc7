"""Time a default `lab distill-train` run (engine/lab/params.DistillTrainParams defaults)
with the default model as the teacher; print the held-out KL of both students at the
start and the end, the steps, the seconds and the machine's load average.

    python scripts/bench_distill.py [--steps N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from engine.backends.base import prepare_process

    prepare_process()
    from engine.backends.mlx.distill_train import train_students
    from engine.backends.mlx.loader import ensure_default_model, load_model
    from engine.lab import DistillTrainParams

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=DistillTrainParams().steps)
    args = ap.parse_args()
    folder = ensure_default_model()
    teacher = load_model(folder, prefer="speed")[0]
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    result, _models = train_students(
        teacher, folder, DistillTrainParams(steps=args.steps, save=False)
    )
    print(f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f}; {time.perf_counter() - t0:.0f} s")
    print(
        f"steps {result.steps_done}, train tokens {result.train_tokens}, "
        f"held out {result.heldout_tokens}"
    )
    print(f"student parameters {result.student_parameters:,}; compute {teacher.compute}")
    print("eval steps", result.eval_steps)
    print("soft", [round(k, 3) for k in result.heldout_kl_soft])
    print("hard", [round(k, 3) for k in result.heldout_kl_hard])
    print(result.sentence)


if __name__ == "__main__":
    main()
