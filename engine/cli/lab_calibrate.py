"""`logitscope lab calibrate`: does the model know when it is wrong? Each question of a set
answered greedily and N times sampled (one batched pass per question), its confidence
signals against whether it was right: accuracy, AUROC per signal with its 95 % bootstrap
interval, the reliability diagram, ECE and the risk-coverage curve, answers cut by the
token limit counted (engine/backends/mlx/calibrate.py; the definitions in
engine/lab/confidence.py).

    logitscope lab calibrate [--model M] [--questions FILE] [--samples 5] [--limit K] [--json]

`--json` prints the whole ConfidenceResult (every row and signal, the bin and tie
conventions, the load time); questions per minute count the answering only.

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
    """Run `lab calibrate` in this process, by the function the Lab window reaches through
    the engine process (lab_runs.run_experiment); the exit status."""
    from engine.cli.lab import lab_record
    from engine.lab.questions import load_questions
    from engine.run.settings import SamplingSettings

    params = CalibrateParams(
        questions=args.questions,
        samples=args.samples,
        limit=args.limit,
        temperature=args.temp,
        max_tokens=args.max_tokens,
        seed=args.seed,
    )
    load_questions(params.questions)  # a bad file: one line, exit 2, before any model loads
    say = lambda m, f: print(f"[{f:4.0%}] {m}", file=sys.stderr)  # noqa: E731
    record = lab_record(args.model, say)
    from engine.backends.mlx.lab_runs import run_experiment

    # the engine process's path (calibrate_runs.calibrate_lab): its load time measured
    result = run_experiment(record, params, "", SamplingSettings(), say)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False))
        return 0
    _print(result)
    return 0


def _auroc(s) -> str:
    """A signal's AUROC in words, with its interval."""
    if not s.informative:
        return "not informative here (the same on every question)"
    if s.auroc is None:
        return "AUROC undefined"
    text = f"AUROC {s.auroc:.3f}"
    if s.auroc_low is not None:
        text += f" (95 % {s.auroc_low:.2f}-{s.auroc_high:.2f})"
    return text


def _print(r) -> None:
    from engine.lab.confidence_stats import pct

    print(
        f"{r.model}: {r.answered} of {r.asked} questions, {r.samples} samples each, "
        f"at most {r.max_tokens} tokens an answer"
    )
    print(r.sentence)
    print(f"rule: {r.rule}")
    print(f"bins: {r.bins_rule}")
    print(f"risk-coverage: {r.ties_rule}")
    for s in r.signals:
        ece = f", ECE {s.ece:.3f}" if s.ece is not None else ""
        keep = (
            f", {pct(s.accuracy_abstain_20)} right abstaining on 20 %"
            if s.accuracy_abstain_20 is not None and s.informative
            else ""
        )
        print(f"  {s.name:<46} {_auroc(s)}{ece}{keep}")
    print(f"cut by the {r.max_tokens}-token limit: {r.cut} of {r.answered} answers")
    if r.overrides:
        print(f"verdicts set by a person: rows {', '.join(str(i) for i in r.overrides)}")
    if r.answered:
        print(
            f"{r.questions_per_minute:.1f} questions per minute ({r.rate_basis}); "
            f"{r.seconds:.1f} s answering"
        )
    wrong = [row for row in r.rows if not row.correct][:10]
    if wrong:
        print("wrong answers (first 10):")
        for row in wrong:
            cut = " [cut]" if row.cut else ""
            print(
                f"  line {row.line}: {row.question} -> {row.answer!r}{cut} "
                f"(accepted {row.accepted[0]!r})"
            )
