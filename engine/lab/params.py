"""The lab's experiments, as frozen parameter dataclasses of plain values.

Each is validated once, here, when it is made (a SettingsError says what is out
of range), and crosses the process pipe as itself (engine/process/operations.Lab). The
command line and the Lab window build the same dataclasses and take every default
from here (the dataclasses' own, and the few named below where one of them starts
elsewhere). Each experiment's name, parameters, runner and command are listed once,
in engine/lab/registry.py (which also makes one from its name: params_from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.errors import SettingsError
from engine.run.settings import BIT_WIDTHS

MAX_ANSWER = 512  # answer tokens any experiment generates or teacher-forces


def _whole(value, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SettingsError(f"{what} must be a whole number from {low} to {high}, not {value!r}")
    return value


def _wholes(values, low: int, high: int, what: str) -> tuple[int, ...]:
    values = tuple(values)
    if not values:
        raise SettingsError(f"{what}: give at least one value")
    return tuple(_whole(v, low, high, what) for v in values)


def _bits(values, what: str) -> tuple[int, ...]:
    values = _wholes(values, 1, 16, what)
    bad = [b for b in values if b not in BIT_WIDTHS]
    if bad:
        raise SettingsError(f"MLX quantizes to 2, 3, 4, 5, 6 or 8 bits, not {bad}")
    return values


@dataclass(frozen=True)
class QuantParams:
    """Quantization A/B: re-quantized variants teacher-forced on the reference's answer.

    Attributes:
        bits: the widths to re-quantize to (each one of BIT_WIDTHS).
        tokens: the reference answer's length in tokens (1..MAX_ANSWER).
    """

    bits: tuple[int, ...] = (8, 6, 4, 3)
    tokens: int = 24
    kind: ClassVar[str] = "quant"

    def __post_init__(self):
        object.__setattr__(self, "bits", _bits(self.bits, "bits"))
        _whole(self.tokens, 1, MAX_ANSWER, "the answer length (tokens)")


@dataclass(frozen=True)
class SpeculativeParams:
    """Greedy speculative decoding: a draft proposes k tokens, the target verifies.

    Attributes:
        ks: the k values to run (tokens drafted per pass, 1..16 each).
        draft_bits: the re-quantized draft's width (one of BIT_WIDTHS).
        tokens: the answer's length in tokens (1..1024).
        draft: another model's spec as the draft; None: the target re-quantized.
    """

    ks: tuple[int, ...] = (1, 2, 4)
    draft_bits: int = 3
    tokens: int = 32
    draft: str | None = None  # another model as the draft (default: the target re-quantized)
    kind: ClassVar[str] = "speculative"

    def __post_init__(self):
        object.__setattr__(self, "ks", _wholes(self.ks, 1, 16, "k (tokens drafted per pass)"))
        _bits((self.draft_bits,), "the draft's bits")
        _whole(self.tokens, 1, 1024, "the answer length (tokens)")


@dataclass(frozen=True)
class BatchParams:
    """The built-in prompts answered at each batch size (as many as the largest holds).

    Attributes:
        sizes: the batch sizes (1..64 each).
        tokens: tokens generated per prompt (1..MAX_ANSWER).
    """

    sizes: tuple[int, ...] = (1, 2, 4, 8)
    tokens: int = 16
    kind: ClassVar[str] = "batch"

    def __post_init__(self):
        object.__setattr__(self, "sizes", _wholes(self.sizes, 1, 64, "batch sizes"))
        _whole(self.tokens, 1, MAX_ANSWER, "the answer length (tokens)")


@dataclass(frozen=True)
class CacheParams:
    """The prompt cache: a conversation grown `turns` turns, each run cached, then cold.

    With `rounds` > 0 it also runs turn 2 behind a long system prompt, cold and
    cached, alternated over `rounds` rounds.

    Attributes:
        turns: conversation turns (0..12).
        tokens: answer tokens per turn (1..256).
        rounds: cold/cached rounds behind the long system prompt (0..20).
        first: the conversation's first message.
        kv_bits: quantized KV caches (8, 4) to compare with the float one on the first
            message: bytes, speed and per-token KL (engine/backends/mlx/lab_kv.py).
    """

    turns: int = 4
    tokens: int = 12
    rounds: int = 0
    first: str = "Why do ships float?"  # the conversation's first message
    kv_bits: tuple[int, ...] = ()
    kind: ClassVar[str] = "cache"

    def __post_init__(self):
        _whole(self.turns, 0, 12, "turns")
        _whole(self.tokens, 1, 256, "the answer length (tokens)")
        _whole(self.rounds, 0, 20, "rounds")
        object.__setattr__(self, "kv_bits", tuple(self.kv_bits or ()))
        if any(b not in (4, 8) for b in self.kv_bits):
            raise SettingsError(f"KV cache bits must be 8 or 4, not {list(self.kv_bits)}")
        if not self.turns and not self.rounds and not self.kv_bits:
            raise SettingsError(
                "give turns (a conversation), rounds (turn 2 cold vs cached) or kv_bits"
            )
        if not isinstance(self.first, str) or not self.first.strip():
            raise SettingsError("the conversation's first message is empty")


MAX_DISTILL_TEXT = 200_000  # characters of one distillation text (tens of thousands of tokens)
EMBEDDINGS = ("projected", "learned")  # the student's embedding: the teacher's projected, or random


def _text(value, what: str, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{what} is empty: give some text")
    if len(value) > MAX_DISTILL_TEXT:
        raise SettingsError(f"{what} is {len(value):,} characters; at most {MAX_DISTILL_TEXT:,}")


def _number(value, low: float, high: float, what: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not low <= value <= high:
        raise SettingsError(f"{what} must be a number from {low:g} to {high:g}, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class DistillParams:
    """Teacher (the loaded model) and student read the same text teacher-forced.

    Attributes:
        student: the student's model spec (a folder, a .gguf file or a name).
        text: the text both read.
        top: candidates kept per token for the side-by-side distributions (1..50).
        most: tokens (or words) listed where the two disagree most (1..100).
        chunk_tokens: tokens per forward pass; None: chosen from the vocabulary size.
        student_bits: re-quantize the student's weights to this many bits after loading
            (one of BIT_WIDTHS): the teacher's own folder then gives a student that
            really differs (QUICK_STUDENT_BITS); None: the student as stored.
    """

    student: str
    text: str
    top: int = 10
    most: int = 12
    chunk_tokens: int | None = None
    student_bits: int | None = None
    kind: ClassVar[str] = "distill"

    def __post_init__(self):
        if not isinstance(self.student, str) or not self.student.strip():
            raise SettingsError("give the student model (a folder, a .gguf file or a name)")
        _text(self.text, "the text")
        _whole(self.top, 1, 50, "candidates kept per token")
        _whole(self.most, 1, 100, "tokens listed where they disagree most")
        if self.chunk_tokens is not None:
            _whole(self.chunk_tokens, 1, 4096, "tokens per chunk")
        if self.student_bits is not None:
            _bits((self.student_bits,), "the student's bits")


# The quick distillation default (the Lab's first student, the tour's lesson): the
# teacher re-quantized to 3 bits, a student that differs (its own stored weights do not).
QUICK_STUDENT_BITS = 3


@dataclass(frozen=True)
class DistillTrainParams:
    """A small student trained from the loaded teacher: soft targets vs hard labels.

    Both students start from the same weights and see the same windows of the text
    in the same order (engine/backends/mlx/distill_train.py).

    Attributes:
        text: the training text; None: resources/distill_text.txt. Its last
            `heldout_tokens` tokens are held out (never trained on).
        steps: optimizer steps (1..100000).
        width: the student's hidden size (16..1024, a multiple of 16).
        layers: its transformer layers (1..12).
        tau: the soft targets' temperature (0.5..10).
        alpha: weight of the soft (KL) loss; 1 - alpha on the hard labels (0..1).
        batch, seq: windows per step and tokens per window.
        lr: Adam's learning rate.
        seed: the student's initialisation and the data order.
        eval_every: held-out KL to the teacher every this many steps (and at 0 and the end).
        heldout_tokens: tokens held out at the text's end.
        train_tokens: at most this many tokens before them are trained on (the teacher
            reads each once, at ~20 tokens/s on a 2-core CPU: the run's fixed cost).
        top_k: teacher probabilities kept per token as soft targets (the rest lumped).
        embedding: "projected" (the teacher's, randomly projected) or "learned" (random).
        save: write both students as MLX model folders in the models folder.
    """

    text: str | None = None
    steps: int = 60
    width: int = 64
    layers: int = 2
    tau: float = 2.0
    alpha: float = 1.0
    batch: int = 4
    seq: int = 32
    lr: float = 5e-3
    seed: int = 0
    eval_every: int = 5
    heldout_tokens: int = 128
    train_tokens: int = 512
    top_k: int = 64
    embedding: str = "projected"
    save: bool = True
    kind: ClassVar[str] = "distill-train"

    def __post_init__(self):
        _text(self.text, "the training text", optional=True)
        _whole(self.steps, 1, 100_000, "steps")
        if _whole(self.width, 16, 1024, "the student's width") % 16:
            raise SettingsError(f"the student's width must be a multiple of 16, not {self.width}")
        _whole(self.layers, 1, 12, "the student's layers")
        object.__setattr__(self, "tau", _number(self.tau, 0.5, 10.0, "the temperature τ"))
        object.__setattr__(self, "alpha", _number(self.alpha, 0.0, 1.0, "α (soft-loss weight)"))
        _whole(self.batch, 1, 256, "windows per step")
        _whole(self.seq, 4, 1024, "tokens per window")
        object.__setattr__(self, "lr", _number(self.lr, 1e-6, 1.0, "the learning rate"))
        _whole(self.seed, 0, 2**31 - 1, "the seed")
        _whole(self.eval_every, 1, 100_000, "held-out KL every (steps)")
        _whole(self.heldout_tokens, 8, 100_000, "held-out tokens")
        _whole(self.train_tokens, 8, 1_000_000, "training tokens")
        _whole(self.top_k, 1, 1024, "soft targets kept per token")
        if self.embedding not in EMBEDDINGS:
            raise SettingsError(f"the embedding is projected or learned, not {self.embedding!r}")
        if not isinstance(self.save, bool):
            raise SettingsError("save is true or false")


@dataclass(frozen=True)
class CalibrateParams:
    """Confidence against correctness on a question set (engine/backends/mlx/calibrate.py).

    Attributes:
        questions: a JSONL or CSV question file; None: the bundled set
            (engine/lab/questions.py says the format and the correctness rule).
        samples: sampled answers per question, in the same batched pass (0..32).
        limit: answer only the first this many questions; None: all of them.
        temperature: the samples' temperature (0.05..2).
        max_tokens: most tokens per answer (1..64); the default lets a small model finish
            its answer (on SmolLM2-135M, 39 of 40 greedy answers ended within 30 tokens, 24
            within 12); an answer the limit stops is marked cut.
        seed: the samples' random seed.
        journal: also journal each question's greedy answer as a run, with its token
            charts, in a History session titled "Confidence" (the Lab window does, so a
            question's row opens its run in the playground; the command line does not).
    """

    questions: str | None = None
    samples: int = 5
    limit: int | None = None
    temperature: float = 1.0
    max_tokens: int = 32
    seed: int = 0
    journal: bool = False
    kind: ClassVar[str] = "calibrate"

    def __post_init__(self):
        _text(self.questions, "the question file", optional=True)
        _whole(self.samples, 0, 32, "sampled answers per question")
        if self.limit is not None:
            _whole(self.limit, 1, 100_000, "the number of questions")
        t = _number(self.temperature, 0.05, 2.0, "the samples' temperature")
        object.__setattr__(self, "temperature", t)
        _whole(self.max_tokens, 1, 64, "tokens per answer")
        _whole(self.seed, 0, 2**31 - 1, "the seed")
        if not isinstance(self.journal, bool):
            raise SettingsError("journal is true or false")


# The annotation of "an experiment's parameters" (RouteParams too, in engine/lab/routing.py;
# every experiment, with its runner and command: engine/lab/registry.py).
LabParams = (
    QuantParams
    | SpeculativeParams
    | BatchParams
    | CacheParams
    | DistillParams
    | DistillTrainParams
    | CalibrateParams
)


# Where a default differs between the command line and the Lab window, both start here.
WINDOW_QUANT_BITS = (8, 4, 3)  # the Lab window's bit boxes checked at first
WINDOW_KV_BITS = (8, 4)  # the Lab window's "Compare KV precision" (`lab cache --kv-bits`)
COMMAND_SPECULATIVE = SpeculativeParams(ks=(4,))  # `lab speculative` runs one k
# `lab cache`: turn 2 behind a long system prompt, cold vs cached, no conversation
COMMAND_CACHE = CacheParams(turns=0, tokens=8, rounds=3)


__all__ = [
    "QUICK_STUDENT_BITS",
    "COMMAND_CACHE",
    "COMMAND_SPECULATIVE",
    "WINDOW_KV_BITS",
    "WINDOW_QUANT_BITS",
    "LabParams",
]
