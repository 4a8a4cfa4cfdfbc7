"""The lab's results, as frozen dataclasses of plain values.

What `logitscope lab … --json` prints is `to_dict()` of these (field names kept
from earlier versions; only additions); the Lab window draws the dataclasses
themselves, which cross the process pipe as they are. Rows are tuples of frozen
row dataclasses (one per variant, run, batch size or turn). `result_from(kind,
data)` rebuilds one from JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.plain_data import PlainData


@dataclass(frozen=True)
class _Row(PlainData):
    """A row of a result: built from the dict the experiment measured (`from_dict`)."""


@dataclass(frozen=True)
class QuantVariant(_Row):
    """One variant against the reference; kl, agree, delta_logprob per answer token."""

    name: str
    key: str
    bits: int | None  # None: the reference, or a model as installed
    weight_bytes: int
    mean_kl: float
    top1_agreement: float
    perplexity: float
    prefill_tps: float
    decode_tps: float
    kl: tuple[float, ...]
    agree: tuple[bool, ...]
    delta_logprob: tuple[float, ...]


@dataclass(frozen=True)
class SpeculativeRound(_Row):
    """One target pass: the draft's tokens, how many were accepted, the target's own."""

    drafted: tuple[int, ...]
    accepted: int
    correction: int
    draft_probs: tuple[float, ...]
    target_probs: tuple[float, ...]


@dataclass(frozen=True)
class SpeculativeRun(_Row):
    """Speculative decoding at one k."""

    k: int
    tokens: tuple[int, ...]
    same_as_target: bool
    drafted: int
    accepted: int
    rejected: int
    acceptance: float
    target_passes: int
    tokens_per_pass: float
    seconds: float
    speedup: float
    rounds: tuple[SpeculativeRound, ...]
    nested: ClassVar[dict] = {"rounds": SpeculativeRound}


@dataclass(frozen=True)
class BatchRow(_Row):
    """The prompt set answered at one batch size."""

    batch_size: int
    seconds: float
    generated_tokens: int
    prompt_tokens: int
    total_tps: float
    per_sequence_tps: float
    peak_memory_bytes: int


@dataclass(frozen=True)
class CeilingPoint(_Row):
    """The device's bound on total tokens/s at one batch size."""

    batch_size: int
    tps: float


@dataclass(frozen=True)
class CacheTurn(_Row):
    """One conversation turn, run from the cache and cold."""

    turn: int
    message: str
    answer: str
    prompt_tokens: int
    cached_tokens: int
    cached_ttft_s: float
    cold_ttft_s: float
    speedup: float
    kv_cache_bytes: int | None
    kv_cache_tokens: int | None = None  # older results: context_tokens - 1
    context_tokens: int = 0
    same_tokens: bool = True
    max_logprob_difference: float = 0.0


@dataclass(frozen=True)
class KVPrecision(_Row):
    """The first message with one KV precision (float first); kl against float."""

    kv_bits: int | None  # None: float
    kv_cache_bytes: int
    kv_cache_tokens: int | None
    bytes_per_token: float | None
    ttft_s: float
    decode_tps: float | None
    tokens: int
    same_tokens: bool
    kl: tuple[float, ...] = ()
    mean_kl: float = 0.0
    max_kl: float = 0.0


@dataclass(frozen=True)
class _Result(PlainData):
    """A result: `to_dict()` is its JSON, `from_dict()` rebuilds it (engine/plain_data.py)."""

    kind: ClassVar[str] = ""


@dataclass(frozen=True)
class QuantResult(_Result):
    """Quantization A/B: each variant against the reference (the first row)."""

    model: str
    reference: str  # what the reference computes in (e.g. float32 dequantized from 4-bit)
    answer_ids: tuple[int, ...]
    answer: tuple[str, ...]  # the answer's tokens, readable
    labels: dict  # token id (str) -> readable label
    top: dict  # variant key -> per step, the top (token id, probability) pairs
    variants: tuple[QuantVariant, ...]
    kind: ClassVar[str] = "quant"
    nested: ClassVar[dict] = {"variants": QuantVariant}


@dataclass(frozen=True)
class SpeculativeResult(_Result):
    """Speculative decoding: one run per k against the target alone."""

    target: str
    draft: str
    target_alone_s: float
    target_tokens: tuple[int, ...]
    labels: dict
    runs: tuple[SpeculativeRun, ...]
    text: str = ""  # the target's greedy answer, decoded
    kind: ClassVar[str] = "speculative"
    nested: ClassVar[dict] = {"runs": SpeculativeRun}


@dataclass(frozen=True)
class BatchResult(_Result):
    """Batching: one row per batch size, and the device's ceiling at each."""

    rows: tuple[BatchRow, ...]
    answers: dict  # batch size (str) -> each prompt's answer token ids
    prompts: tuple[str, ...]
    unbatched_equal: dict  # batch size (str) -> same answers as the smallest batch
    ceiling: tuple[CeilingPoint, ...] = ()
    ceiling_source: str = ""
    kind: ClassVar[str] = "batch"
    nested: ClassVar[dict] = {"rows": BatchRow, "ceiling": CeilingPoint}


@dataclass(frozen=True)
class CacheResult(_Result):
    """The prompt cache: one row per conversation turn. With rounds, turn 2 behind a
    long system prompt: prompt_tokens … max_logprob_difference at the top level.
    With kv_bits, kv_precision: one row per KV precision (float first)."""

    rows: tuple[CacheTurn, ...]
    compute: str
    context_length: int
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    cold_ttft_s: float | None = None
    cached_ttft_s: float | None = None
    ratio: float | None = None
    rounds: int = 0
    cold_ttfts: tuple[float, ...] = ()
    cached_ttfts: tuple[float, ...] = ()
    same_tokens: bool | None = None
    max_logprob_difference: float | None = None
    kv_precision: tuple[KVPrecision, ...] = ()  # float vs quantized KV: see lab_kv.py
    kind: ClassVar[str] = "cache"
    nested: ClassVar[dict] = {"rows": CacheTurn, "kv_precision": KVPrecision}

    def to_dict(self) -> dict:
        """The result as a plain JSON-ready dict, `rows` also under `conversation`.

        Returns:
            One key per field, plus `conversation` (the name `lab cache --json` gave
            the turns).
        """
        out = super().to_dict()
        out["conversation"] = out["rows"]  # the name `lab cache --json` gave the turns
        return out


@dataclass(frozen=True)
class DistillResult(_Result):
    """Teacher and student on one text (engine/backends/mlx/distill_compare.py).

    With one tokenizer (`same_tokenizer`), a row is a token: `kl` is KL(teacher ‖
    student) over the full vocabulary in nats, `agree` top-1 agreement, `p_teacher_top`
    the student's probability of the teacher's top-1, `*_logprob` each model's
    log-probability of the text's token (its cross-entropy is minus their mean).
    With two tokenizers a row is a word (`*_bits` its surprisal) and `why` says why
    KL is not defined. `most`: the rows where they disagree most, largest first;
    `top`: "teacher"/"student" -> row (str) -> that row's top (token id, p) pairs.
    """

    teacher: str
    student: str
    same_tokenizer: bool
    why: str
    labels: tuple[str, ...]
    kl: tuple[float, ...] = ()
    agree: tuple[bool, ...] = ()
    p_teacher_top: tuple[float, ...] = ()
    teacher_logprob: tuple[float, ...] = ()
    student_logprob: tuple[float, ...] = ()
    teacher_bits: tuple[float, ...] = ()
    student_bits: tuple[float, ...] = ()
    mean_kl: float | None = None
    agreement: float | None = None
    teacher_ce: float | None = None  # nats per token (one tokenizer)
    student_ce: float | None = None
    teacher_bits_per_byte: float = 0.0
    student_bits_per_byte: float = 0.0
    text_bytes: int = 0
    most: tuple[int, ...] = ()
    top: dict | None = None  # see the class docstring
    token_labels: dict | None = None  # "teacher"/"student" -> token id (str) -> label
    seconds: float = 0.0
    kind: ClassVar[str] = "distill"


@dataclass(frozen=True)
class DistillTrainResult(_Result):
    """Two students trained from one teacher: soft targets vs hard labels.

    Per step: each run's training loss; every `eval_every` steps (`eval_steps`), each
    student's mean KL(teacher ‖ student) over the full vocabulary on the held-out
    tokens, nats. `saved`: "soft"/"hard" -> the model folder written (empty: none)."""

    teacher: str
    settings: dict  # the DistillTrainParams' fields (the text by name and length)
    steps_done: int
    soft_loss: tuple[float, ...]
    hard_loss: tuple[float, ...]
    eval_steps: tuple[int, ...]
    heldout_kl_soft: tuple[float, ...]
    heldout_kl_hard: tuple[float, ...]
    train_tokens: int
    heldout_tokens: int
    student_parameters: int
    seconds: float
    cancelled: bool
    same_batches: bool  # both runs saw identical windows in identical order (checked)
    saved: dict
    sentence: str
    kind: ClassVar[str] = "distill-train"


LabResult = (
    QuantResult | SpeculativeResult | BatchResult | CacheResult | DistillResult | DistillTrainResult
)
_ALL = (QuantResult, SpeculativeResult, BatchResult, CacheResult, DistillResult, DistillTrainResult)
RESULTS = {r.kind: r for r in _ALL}


def result_from(kind: str, data: dict) -> LabResult:
    """Rebuild an experiment's result from its `to_dict()` (e.g. a LabRecord's data).

    Args:
        kind: an experiment's name (engine/lab/registry.py: quant, speculative, batch,
            cache, distill, distill-train, calibrate, route) or a cascade's (cascade).
        data: the result's dict.

    Returns:
        The result dataclass.

    Raises:
        KeyError: an unknown `kind`.
    """
    from engine.lab.confidence import ConfidenceResult  # they import this module's base
    from engine.lab.routing import CascadeResult, RouteResult

    more = {r.kind: r for r in (ConfidenceResult, RouteResult, CascadeResult)}
    return {**RESULTS, **more}[kind].from_dict(data)
