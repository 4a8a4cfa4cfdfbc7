"""Distil a student here: the teacher's soft targets against hard labels, side by side.

The text's tokens (teacher's tokenizer) are split: the last `heldout_tokens` are held
out, the rest cut into windows of `seq` + 1 tokens. The teacher reads each window once,
before training, and keeps per token its top-k probabilities at temperature τ and the
mass of the rest (computed over the full vocabulary on the device): the soft targets.
Two students start from the SAME weights (distill_student.py) and take the SAME
batches of windows in the SAME order (a seeded permutation per epoch), one step each
in turn, each with its own Adam:

- soft: α · τ² · KL(teacher_τ ‖ student_τ) + (1 - α) · cross-entropy on the text, the KL
  over the teacher's top-k and one lumped rest (exact as k reaches V);
- hard: cross-entropy on the text only.

Every `eval_every` steps (and before the first and after the last) each student's
mean KL(teacher ‖ student) at T = 1 over the FULL vocabulary on the held-out tokens
is measured. Each step is reported as a LabStep; the cancel flag is checked before
each step. A finished run saves both students as model folders (none on cancel).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np

from engine.backends.mlx.distill_student import (
    build_student,
    parameter_count,
    save_student,
    student_config,
    student_name,
)
from engine.errors import SettingsError
from engine.lab import DistillTrainParams, DistillTrainResult
from engine.lab.reporter import LabReporter, LabStep, reporter_of

DEFAULT_TEXT = Path(__file__).resolve().parents[3] / "resources" / "distill_text.txt"
TEACHER_WINDOWS = 8  # windows the teacher reads per pass while preparing targets
# Working copies of a (batch, seq, vocabulary) float32 tensor alive at a student step's
# peak: the logits, the log-softmax at τ, the softmax for the KL, and the backward's
# gradients of them. A generous count: refusing a run that would fit is a sentence,
# running one that does not is minutes of swapping.
STEP_COPIES = 6
TEACHER_COPIES = 3  # the teacher's pass over TEACHER_WINDOWS windows: logits, log-softmax, top-k
MEMORY_SHARE = 0.8  # of the memory available now, the most a run may plan to use


def training_bytes(params: DistillTrainParams, vocab_size: int) -> int:
    """Bytes a run's tensors need at their peak, beyond the teacher's loaded weights:
    one student step's (batch, seq, vocabulary) copies, the teacher's pass preparing the
    targets, and the held-out tokens' full distributions (each float32)."""
    p, v = params, vocab_size
    step = STEP_COPIES * p.batch * p.seq * v * 4
    teacher = TEACHER_COPIES * TEACHER_WINDOWS * p.seq * v * 4
    held = 2 * p.heldout_tokens * v * 4
    return step + teacher + held


def check_memory(params: DistillTrainParams, vocab_size: int, available: int | None) -> None:
    """Refuse, in one sentence with the estimate, a run whose tensors would not fit in
    MEMORY_SHARE of the `available` bytes (None: unknown, nothing is refused).

    Raises:
        SettingsError: the estimate is larger.
    """
    need = training_bytes(params, vocab_size)
    if available is None or need <= MEMORY_SHARE * available:
        return
    p = params
    raise SettingsError(
        f"batch {p.batch} × seq {p.seq} needs about {need / 1e9:.1f} GB "
        f"({p.batch} × {p.seq} tokens × a {vocab_size:,}-token vocabulary × 4 bytes × "
        f"{STEP_COPIES} working copies, plus the teacher's targets), but "
        f"{available / 1e9:.1f} GB of memory is available: lower --batch or --seq"
    )


def training_tokens(teacher, params: DistillTrainParams) -> tuple[list[int], str]:
    """The text's token ids (the teacher's tokenizer) and the text's name."""
    text, name = params.text, "your text"
    if text is None:
        text, name = DEFAULT_TEXT.read_text(encoding="utf-8"), DEFAULT_TEXT.name
    return list(teacher.tokenizer.encode(text, add_special_tokens=False)), name


def soft_targets(teacher, windows: mx.array, tau: float, k: int, reporter) -> tuple:
    """The teacher's top-k log-probabilities at τ and the rest's probability.

    Args:
        windows: (M, seq) input ids.

    Returns:
        (ids (M, seq, k) int32, logp (M, seq, k), rest (M, seq)), evaluated.
    """
    ids, logp, rest = [], [], []
    for s in range(0, windows.shape[0], TEACHER_WINDOWS):
        logits = teacher.model(windows[s : s + TEACHER_WINDOWS]).astype(mx.float32) / tau
        lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)  # (b, seq, V)
        top = mx.argpartition(-lp, kth=k - 1, axis=-1)[..., :k]  # (b, seq, k)
        vals = mx.take_along_axis(lp, top, axis=-1)
        r = mx.maximum(1.0 - mx.sum(mx.exp(vals), axis=-1), 0.0)  # (b, seq)
        mx.eval(top, vals, r)
        ids.append(top.astype(mx.int32))
        logp.append(vals)
        rest.append(r)
        reporter("The teacher reads the text…", 0.1 * min(1.0, (s + 8) / windows.shape[0]))
    return mx.concatenate(ids), mx.concatenate(logp), mx.concatenate(rest)


def soft_kl(logits: mx.array, ids: mx.array, logp: mx.array, rest: mx.array, tau: float):
    """Mean KL(teacher_τ ‖ student_τ) over the teacher's top-k and one lumped rest.

    Args:
        logits: (B, L, V) the student's; ids, logp: (B, L, k); rest: (B, L).
    """
    s = logits / tau
    slp = s - mx.logsumexp(s, axis=-1, keepdims=True)  # (B, L, V)
    q = mx.take_along_axis(slp, ids, axis=-1)  # (B, L, k)
    kl = mx.sum(mx.exp(logp) * (logp - q), axis=-1)  # (B, L)
    q_rest = mx.maximum(1.0 - mx.sum(mx.exp(q), axis=-1), 1e-12)
    safe = mx.maximum(rest, 1e-30)
    kl = kl + mx.where(rest > 0, rest * (mx.log(safe) - mx.log(q_rest)), 0.0)
    return mx.mean(kl)


def batch_order(n_windows: int, batch: int, steps: int, seed: int) -> list[np.ndarray]:
    """The window indices of every step: seeded permutations, one per epoch, cut
    into batches (a batch may span two epochs)."""
    rng = np.random.default_rng(seed)
    stream: list[int] = []
    while len(stream) < batch * steps:
        stream.extend(rng.permutation(n_windows).tolist())
    return [np.array(stream[i * batch : (i + 1) * batch]) for i in range(steps)]


class Student:
    """One student with its loss, its optimizer and a digest of every batch it saw."""

    def __init__(self, model, loss, lr: float):
        self.model, self.loss = model, loss
        self.optimizer = optim.Adam(learning_rate=lr)
        self.step_fn = nn.value_and_grad(model, loss)
        self.seen = hashlib.sha256()

    def step(self, x: mx.array, *targets) -> float:
        """One optimizer step on the batch `x` (B, L); the loss before it."""
        self.seen.update(np.array(x).tobytes())
        loss, grads = self.step_fn(self.model, x, *targets)
        self.optimizer.update(self.model, grads)
        mx.eval(loss, self.model.parameters(), self.optimizer.state)
        return float(loss)

    def heldout_kl(self, x: mx.array, teacher_lp: mx.array) -> float:
        """Mean KL(teacher ‖ student) at T = 1 over the full vocabulary, nats per token."""
        s = self.model(x)[0].astype(mx.float32)  # (H, V)
        slp = s - mx.logsumexp(s, axis=-1, keepdims=True)
        kl = mx.mean(mx.sum(mx.exp(teacher_lp) * (teacher_lp - slp), axis=-1))
        return float(kl)


def train_students(
    teacher, teacher_folder: Path, params: DistillTrainParams, progress=None, out_dir=None
) -> tuple[DistillTrainResult, dict]:
    """Train the soft-target and the hard-label student (see the module).

    Args:
        teacher: the teacher's LoadedModel.
        teacher_folder: its folder (config, tokenizer files).
        params: the run's settings.
        progress: a (message, fraction) callback or a LabReporter (steps, cancel).
        out_dir: where the students are saved (None: not saved).

    Returns:
        (the DistillTrainResult, {"soft": model, "hard": model} as trained).

    Raises:
        SettingsError: a text too short for one window and the held-out part.
    """
    from engine.backends.mlx.compute_path import available_memory

    reporter: LabReporter = reporter_of(progress)
    p = params
    check_memory(p, teacher.vocab_size, available_memory())  # before anything is allocated
    tokens, text_name = training_tokens(teacher, p)
    train, held = tokens[: -p.heldout_tokens], tokens[-p.heldout_tokens :]
    train = train[-p.train_tokens :]  # the tokens just before the held-out ones
    n_windows = (len(train) - 1) // p.seq
    if n_windows < 1:
        raise SettingsError(
            f"the text is {len(tokens):,} tokens: it needs at least "
            f"{p.seq + 1 + p.heldout_tokens:,} "
            f"(one window of {p.seq + 1} and {p.heldout_tokens} held out): give a longer text"
        )
    t0 = time.perf_counter()
    cut = np.array(train[: n_windows * p.seq + 1])
    x_all = mx.array(np.stack([cut[i * p.seq : (i + 1) * p.seq] for i in range(n_windows)]))
    y_all = mx.array(np.stack([cut[i * p.seq + 1 : (i + 1) * p.seq + 1] for i in range(n_windows)]))
    k = min(p.top_k, teacher.vocab_size)
    t_ids, t_logp, t_rest = soft_targets(teacher, x_all, p.tau, k, reporter)
    x_held = mx.array(held[:-1])[None]  # (1, H)
    h_logits = teacher.model(x_held)[0].astype(mx.float32)
    held_lp = h_logits - mx.logsumexp(h_logits, axis=-1, keepdims=True)  # (H, V), on the device
    mx.eval(held_lp)

    config = student_config(teacher_folder, teacher.vocab_size, p.width, p.layers)
    first = build_student(config, teacher.model, p.embedding, p.seed)
    second = build_student(config, teacher.model, "learned", p.seed)
    second.update(first.parameters())  # the same initial weights, not merely the same seed

    def soft_loss(model, x, y, ids, logp, rest):
        logits = model(x).astype(mx.float32)
        ce = nn.losses.cross_entropy(logits, y, reduction="mean")
        kl = soft_kl(logits, ids, logp, rest, p.tau)
        return p.alpha * p.tau**2 * kl + (1.0 - p.alpha) * ce

    def hard_loss(model, x, y):
        return nn.losses.cross_entropy(model(x).astype(mx.float32), y, reduction="mean")

    soft, hard = Student(first, soft_loss, p.lr), Student(second, hard_loss, p.lr)
    losses = {"soft": [], "hard": []}
    evals: dict[str, list] = {"steps": [], "soft": [], "hard": []}

    def evaluate(step: int) -> tuple[float, float]:
        kls = (soft.heldout_kl(x_held, held_lp), hard.heldout_kl(x_held, held_lp))
        evals["steps"].append(step)
        evals["soft"].append(kls[0])
        evals["hard"].append(kls[1])
        return kls

    kl0 = evaluate(0)
    reporter.partial(LabStep(p.kind, 0, _step_data(None, None, kl0, time.perf_counter() - t0)))
    cancelled, done = False, 0
    for step, idx in enumerate(batch_order(n_windows, p.batch, p.steps, p.seed), start=1):
        if reporter.should_stop():
            cancelled = True
            break
        sel = mx.array(idx)
        x, y = x_all[sel], y_all[sel]
        ls = soft.step(x, y, t_ids[sel], t_logp[sel], t_rest[sel])
        lh = hard.step(x, y)
        losses["soft"].append(ls)
        losses["hard"].append(lh)
        done = step
        kls = evaluate(step) if step % p.eval_every == 0 or step == p.steps else None
        reporter.partial(LabStep(p.kind, step, _step_data(ls, lh, kls, time.perf_counter() - t0)))
        reporter(f"step {step:,} of {p.steps:,}", 0.1 + 0.85 * step / p.steps)
    if done and evals["steps"][-1] != done:
        evaluate(done)
    seconds = time.perf_counter() - t0
    models = {"soft": soft.model, "hard": hard.model}
    settings = {**asdict(p), "text": text_name, "text_tokens": len(tokens)}
    saved = {}
    if out_dir is not None and not cancelled and p.save:
        reporter("Saving the students…", 0.97)
        teacher_name = teacher_folder.name
        for kind, model in models.items():
            meta = {**settings, "teacher": teacher_name, "targets": kind, "steps_done": done}
            meta["heldout_kl"] = [evals[kind][0], evals[kind][-1]]
            out = Path(out_dir) / student_name(teacher_name, kind)
            saved[kind] = str(save_student(model, config, meta, teacher_folder, out))
    result = DistillTrainResult(
        teacher=teacher_folder.name,
        settings=settings,
        steps_done=done,
        soft_loss=tuple(losses["soft"]),
        hard_loss=tuple(losses["hard"]),
        eval_steps=tuple(evals["steps"]),
        heldout_kl_soft=tuple(evals["soft"]),
        heldout_kl_hard=tuple(evals["hard"]),
        train_tokens=n_windows * p.seq,
        heldout_tokens=len(held) - 1,
        student_parameters=parameter_count(soft.model),
        seconds=seconds,
        cancelled=cancelled,
        same_batches=soft.seen.digest() == hard.seen.digest(),
        saved=saved,
        sentence=verdict(evals, done, seconds, cancelled),
    )
    return result, models


def _step_data(ls, lh, kls, seconds: float) -> dict:
    return {
        "soft_loss": ls,
        "hard_loss": lh,
        "heldout_kl_soft": kls[0] if kls else None,
        "heldout_kl_hard": kls[1] if kls else None,
        "seconds": seconds,
    }


def verdict(evals: dict, steps: int, seconds: float, cancelled: bool) -> str:
    """The sentence saying which student ended closer to the teacher, by how much."""
    s0, s1, h0, h1 = evals["soft"][0], evals["soft"][-1], evals["hard"][0], evals["hard"][-1]
    how = "cancelled after" if cancelled else "after"
    head = (
        f"{how.capitalize()} {steps:,} steps ({seconds:.0f} s), held-out KL to the teacher: "
        f"soft-target student {s0:.2f} → {s1:.2f} nats/token, hard-label student "
        f"{h0:.2f} → {h1:.2f}."
    )
    if not steps:
        return head
    closer, other = ("soft-target", "hard-label") if s1 < h1 else ("hard-label", "soft-target")
    gap = abs(h1 - s1)
    share = gap / max(s1, h1) if max(s1, h1) > 0 else 0.0
    return (
        f"{head} The {closer} student is closer by {gap:.3f} nats/token "
        f"({share:.0%} less than the {other} one)."
    )


def train_experiment(
    teacher, folder: Path, params: DistillTrainParams, reporter
) -> DistillTrainResult:
    """The lab's run: students saved in the models folder (engine/store/paths.models_dir)."""
    from engine.store.paths import models_dir

    return train_students(teacher, folder, params, reporter, models_dir())[0]
