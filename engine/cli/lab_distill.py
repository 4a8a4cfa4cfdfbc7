"""`logitscope lab distill|distill-train`: teacher vs student on a text, and a student
distilled here, run in this process by the function the Lab window reaches through the
engine process (engine/backends/mlx/lab_runs.run_experiment, its runners in
distill_runs.py), on the same parameter dataclasses (engine/lab/params.py).

    logitscope lab distill --teacher A --student B (--text FILE | --text-str TEXT) [--json]
    logitscope lab distill-train [--teacher M] [--text FILE] [--steps N] [--width W]
        [--layers L] [--tau T] [--alpha A] [--json]

`distill --json` prints the DistillResult's fields; `distill-train --json` prints one
JSON line per step (a LabStep: soft and hard loss, held-out KL every few steps) and then
the DistillTrainResult's fields on the last line.
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

from engine.cli.args import MODEL_ARG
from engine.lab import DistillParams, DistillResult, DistillTrainParams, DistillTrainResult
from engine.lab.reporter import LabReporter

TRAIN = DistillTrainParams()


def add_distill(kinds) -> None:
    """Add `lab distill` (defaults: engine/lab/params.py)."""
    d = kinds.add_parser("distill", help="teacher vs student on one text: per-token KL")
    _teacher(d)
    d.add_argument("--student", required=True, type=MODEL_ARG, help="the student model")
    d.add_argument("--text", default=None, metavar="FILE", help="a UTF-8 text file ('-': stdin)")
    d.add_argument("--text-str", default=None, metavar="TEXT", help="the text itself")
    d.add_argument("--most", type=int, default=12, help="tokens listed where they disagree most")
    d.add_argument(
        "--student-bits",
        type=int,
        default=None,
        metavar="BITS",
        help="re-quantize the student to BITS bits first (2-8; the teacher's own folder "
        "then gives a student that differs)",
    )


def add_train(kinds) -> None:
    """Add `lab distill-train` (defaults: engine/lab/params.py)."""
    t = kinds.add_parser("distill-train", help="distil a small student: soft vs hard targets")
    _teacher(t)
    t.add_argument("--text", default=None, metavar="FILE", help="training text (default: shipped)")
    t.add_argument("--steps", type=int, default=TRAIN.steps, help="optimizer steps")
    t.add_argument("--width", type=int, default=TRAIN.width, help="the student's hidden size")
    t.add_argument("--layers", type=int, default=TRAIN.layers, help="the student's layers")
    t.add_argument("--tau", type=float, default=TRAIN.tau, help="soft targets' temperature")
    t.add_argument("--alpha", type=float, default=TRAIN.alpha, help="weight of the soft loss")
    t.add_argument("--batch", type=int, default=TRAIN.batch, help="windows per step")
    t.add_argument("--seq", type=int, default=TRAIN.seq, help="tokens per window")
    t.add_argument("--lr", type=float, default=TRAIN.lr, help="Adam's learning rate")
    t.add_argument("--seed", type=int, default=TRAIN.seed, help="init and data order")
    t.add_argument("--eval-every", type=int, default=TRAIN.eval_every, help="held-out KL every")
    t.add_argument("--no-save", action="store_true", help="do not save the students")


def _teacher(p) -> None:
    p.add_argument(
        "--teacher", "--model", dest="model", default=None, type=MODEL_ARG, help="the teacher"
    )
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")


def distill_params(args) -> DistillParams:
    """`lab distill`'s parameters from the command's options (validated)."""
    from engine.cli.read_cmd import read_text
    from engine.errors import SettingsError

    if (args.text is None) == (args.text_str is None):
        raise SettingsError("give --text FILE ('-' for stdin) or --text-str TEXT, not both")
    text, _name = read_text(SimpleNamespace(file=args.text, text=args.text_str))
    return DistillParams(args.student, text, most=args.most, student_bits=args.student_bits)


def train_params(args) -> DistillTrainParams:
    """`lab distill-train`'s parameters from the command's options (validated)."""
    from engine.cli.read_cmd import read_text

    text = None
    if args.text is not None:
        text = read_text(SimpleNamespace(file=args.text, text=None))[0]
    return DistillTrainParams(
        text=text,
        steps=args.steps,
        width=args.width,
        layers=args.layers,
        tau=args.tau,
        alpha=args.alpha,
        batch=args.batch,
        seq=args.seq,
        lr=args.lr,
        seed=args.seed,
        eval_every=args.eval_every,
        save=not args.no_save,
    )


def cmd_distill(args) -> int:
    """Run `lab distill` in this process; the exit status."""
    return _run(args, distill_params(args), _print_compare)  # bad input: before any load


def cmd_distill_train(args) -> int:
    """Run `lab distill-train` in this process; the exit status."""
    return _run(args, train_params(args), _print_train)  # bad input: before any load


def _run(args, params, printer) -> int:
    """Load the teacher, run `params` (lab_runs.run_experiment, as the engine process
    does) with Ctrl-C cancelling at the next step, and print the result."""
    from engine.cli.lab import lab_record
    from engine.run.settings import SamplingSettings

    say = (lambda m, f: print(f"[{f:4.0%}] {m}", file=sys.stderr)) if not args.json else None

    def step(s) -> None:
        if args.json:
            print(json.dumps(s.to_dict()), flush=True)
        elif s.data["heldout_kl_soft"] is not None:
            print(
                f"step {s.step:4}: held-out KL soft {s.data['heldout_kl_soft']:.3f}, "
                f"hard {s.data['heldout_kl_hard']:.3f} nats/token",
                flush=True,
            )

    from engine.cli.interrupt import CancelOnInterrupt

    record = lab_record(args.model, say)
    from engine.backends.mlx.lab_runs import run_experiment

    # Ctrl-C: the run stops at its next step, as the Lab's Cancel does (no traceback)
    with CancelOnInterrupt(lambda: None) as ctrl_c:
        reporter = LabReporter(say, step, lambda: ctrl_c.pressed > 0)
        result = run_experiment(record, params, "", SamplingSettings(), reporter)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        printer(result)
    return ctrl_c.status(0)


def _print_compare(r: DistillResult) -> None:
    print(f"teacher {r.teacher}, student {r.student}: {len(r.labels)} rows")
    print(r.why)
    if r.same_tokenizer:
        print(
            f"mean KL {r.mean_kl:.4f} nats/token, top-1 agreement {r.agreement:.1%}, "
            f"cross-entropy teacher {r.teacher_ce:.3f} vs student {r.student_ce:.3f} nats/token"
        )
    print(
        f"bits per byte: teacher {r.teacher_bits_per_byte:.3f}, "
        f"student {r.student_bits_per_byte:.3f}"
    )
    for i in r.most:
        if r.same_tokenizer:
            print(
                f"  {r.labels[i]!r:>16}  KL {r.kl[i]:.3f}  "
                f"p(teacher's top) {r.p_teacher_top[i]:.3f}"
            )
        else:
            print(f"  {r.labels[i]!r:>16}  bits {r.teacher_bits[i]} vs {r.student_bits[i]}")


def _print_train(r: DistillTrainResult) -> None:
    print(r.sentence)
    for kind, folder in r.saved.items():
        print(f"{kind} student saved: {folder}")
