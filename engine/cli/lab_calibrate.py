"""`logitscope lab calibrate`: does the model know when it is wrong? Each question of a set
answered greedily and N times sampled (one batched pass per question), its confidence
signals against whether it was right: accuracy, AUROC per signal, the reliability
diagram, ECE and the risk-coverage curve (engine/backends/mlx/calibrate.py).

    logitscope lab calibrate [--model M] [--questions FILE] [--samples 5] [--limit K] [--json]

The question file is JSONL or CSV (engine/lab/questions.py: format and correctness
rule); without one the bundled set (resources/questions/factual.jsonl) is used.
"""

from __future__ import annotations

import json
import sys

from engine.cli.args import MODEL_ARG
from engine.lab.params import CalibrateParams

CALIBRATE = CalibrateParams()


def add_parser(kinds) -> None:
    """Add `lab calibrate` to the lab's experiments (defaults: engine/lab/params.py)."""
    c = kinds.add_parser("calibrate", help="confidence against correctness on a question set")
    c.add_argument("--model", default=None, type=MODEL_ARG, help="MLX folder, .gguf file or name")
    c.add_argument(
        "--questions",
        default=None,
        metavar="FILE",
        help="question set: JSONL (question, answers) or CSV with those columns",
    )
    c.add_argument(
        "--samples", type=int, default=CALIBRATE.samples, help="sampled answers per question"
    )
    c.add_argument("--limit", type=int, default=None, help="only the first K questions")
    c.add_argument(
        "--temp", type=float, default=CALIBRATE.temperature, help="the samples' temperature"
    )
    c.add_argument(
        "--max-tokens", type=int, default=CALIBRATE.max_tokens, help="most tokens per answer"
    )
    c.add_argument("--seed", type=int, default=CALIBRATE.seed, help="the samples' random seed")
    c.add_argument("--json", action="store_true", help="print the result as JSON")


def cmd_calibrate(args) -> int:
    """Run `lab calibrate` in this process; the exit status."""
    from engine.backends.base import prepare_process
    from engine.lab.questions import load_questions

    params = CalibrateParams(
        questions=args.questions,
        samples=args.samples,
        limit=args.limit,
        temperature=args.temp,
        max_tokens=args.max_tokens,
        seed=args.seed,
    )
    load_questions(params.questions)  # a bad file: one line, exit 2, before any model loads
    prepare_process()
    from engine.backends.mlx.backend import MLXBackend
    from engine.backends.mlx.calibrate import calibrate

    say = lambda m, f: print(f"[{f:4.0%}] {m}", file=sys.stderr)  # noqa: E731
    backend = MLXBackend()
    backend.prefer = "speed"  # as the engine runs the lab
    backend.load(args.model, say)
    result = calibrate(backend.lm, backend.record.name, params, say)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False))
        return 0
    _print(result)
    return 0


def _print(r) -> None:
    print(f"{r.model}: {r.answered} of {r.asked} questions, {r.samples} samples each")
    print(r.sentence)
    print(f"rule: {r.rule}")
    for s in r.signals:
        auroc = f"AUROC {s.auroc:.3f}" if s.auroc is not None else "AUROC undefined"
        ece = f", ECE {s.ece:.3f}" if s.ece is not None else ""
        print(f"  {s.name:<46} {auroc}{ece}")
    wrong = [row for row in r.rows if not row.correct][:10]
    if wrong:
        print("wrong answers (first 10):")
        for row in wrong:
            print(
                f"  line {row.line}: {row.question} -> {row.answer!r} "
                f"(accepted {row.accepted[0]!r})"
            )
