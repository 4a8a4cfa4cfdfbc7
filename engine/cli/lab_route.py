"""`logitscope lab route`: hybrid inference, a small model answering first and a larger
one when the small one is not confident enough (engine/lab/routing.py says the
arithmetic, engine/backends/mlx/route_runs.py runs the models).

    logitscope lab route --small A --large B [--questions F] [--limit N] [--signal S] [--json]
    logitscope lab route --small A --large B --threshold T [...]

Without --threshold: both models answer every question once, and the cascade is measured
at every threshold: accuracy against the share escalated and the cost against the large
model alone, the random router and the oracle, APGR, and the cheapest threshold that keeps
95 % of the large model's accuracy. With --threshold: the cascade itself, each question
escalated or kept with its reason. Both models' answers are journaled as runs in a
History session titled "Routing" (--no-journal: not).
"""

from __future__ import annotations

import json
import sys

from engine.cli.args import MODEL_ARG
from engine.lab.params import CalibrateParams
from engine.lab.routing import DEFAULT_SIGNAL, RouteParams, label
from engine.run.settings import SamplingSettings

CALIBRATE = CalibrateParams()
SHOWN = 16  # curve points printed (the rest in --json)


def add_parser(kinds) -> None:
    """Add `lab route` to the lab's experiments."""
    r = kinds.add_parser("route", help="a small model first, a larger one when it is not confident")
    r.add_argument("--small", default=None, type=MODEL_ARG, help="the model that answers first")
    r.add_argument(
        "--large",
        default=None,
        type=MODEL_ARG,
        help="the model it escalates to: local, or on an OpenAI-compatible server "
        "(http://HOST:PORT/v1#MODEL, asked as calibrate asks, in chat form; no API key)",
    )
    r.add_argument(
        "--questions",
        default=None,
        metavar="FILE",
        help="question set: JSONL (question, answers) or CSV with those columns",
    )
    r.add_argument("--limit", type=int, default=None, help="only the first N questions")
    r.add_argument(
        "--signal",
        default=DEFAULT_SIGNAL,
        help="the small model's confidence signal (a `lab calibrate` signal: min_prob, "
        "mean_prob, first_prob, first_entropy, agreement, ...)",
    )
    r.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="run the cascade: escalate when the signal is below this (default: measure "
        "every threshold)",
    )
    r.add_argument(
        "--samples",
        type=int,
        default=None,
        help="the small model's sampled answers per question (default: 5 for a sampled "
        "signal, else 0)",
    )
    r.add_argument(
        "--max-tokens", type=int, default=CALIBRATE.max_tokens, help="most tokens per answer"
    )
    r.add_argument("--seed", type=int, default=CALIBRATE.seed, help="the samples' random seed")
    r.add_argument("--no-journal", action="store_true", help="do not keep the answers in History")
    r.add_argument("--json", action="store_true", help="print the result as JSON")


def cmd_route(args) -> int:
    """Run `lab route` in this process; the exit status."""
    from engine.backends.base import prepare_process
    from engine.lab.questions import load_questions

    params = RouteParams(  # bad settings: one sentence, exit 2, before any model loads
        small=args.small,
        large=args.large,
        questions=args.questions,
        limit=args.limit,
        signal=args.signal,
        threshold=args.threshold,
        samples=args.samples,
        max_tokens=args.max_tokens,
        seed=args.seed,
        journal=not args.no_journal,
    )
    load_questions(params.questions)  # a bad file: one line, exit 2, before any model loads
    prepare_process()
    from engine.backends.mlx.lab_runs import run_experiment

    say = lambda m, f: print(f"[{f:4.0%}] {m}", file=sys.stderr)  # noqa: E731
    # the registry's runner, as the Lab's engine runs it (it loads each model itself)
    result = run_experiment(None, params, "", SamplingSettings(), say)
    if result.journal_error:
        print(
            f"logitscope: the runs were not all saved to History: {result.journal_error}",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False))
        return 0
    (_print_measure if params.threshold is None else _print_cascade)(result)
    return 0


def _print_measure(r) -> None:
    print(
        f"small {r.small}, large {r.large}: {r.compared} of {r.asked} questions, "
        f"signal {label(r.signal)}"
    )
    print(r.sentence)
    if r.points:
        print(
            f"{'threshold':>10} {'escalated':>9} {'accuracy':>8} {'random':>7} {'oracle':>7} "
            f"{'PGR':>6} {'time':>8} {'vs large':>8}"
        )
    step = max(1, len(r.points) // SHOWN)
    shown = [p for i, p in enumerate(r.points) if i % step == 0 or i == len(r.points) - 1]
    for p in shown:
        t = "all" if p.threshold is None else f"{p.threshold:.3g}"
        pgr = "" if p.pgr is None else f"{p.pgr:6.2f}"
        mark = "  <- keeps 95 %" if p == r.target_point else ""
        print(
            f"{t:>10} {p.share:9.0%} {p.accuracy:8.0%} {p.random_accuracy:7.0%} "
            f"{p.oracle_accuracy:7.0%} {pgr:>6} {p.seconds:7.1f}s {p.relative_cost:8.0%}{mark}"
        )
    if r.journal:
        print(f"answers in History: session {r.journal}")


def _print_cascade(r) -> None:
    print(f"small {r.small}, large {r.large}: {label(r.signal)} < {r.threshold:g} escalates")
    for q in r.rows:
        verdict = "right" if q.correct else "wrong"
        print(f"  line {q.line}: {q.reason} -> {q.answer!r} ({verdict})")
    print(r.sentence)
    if r.journal:
        print(f"answers in History: session {r.journal}")
