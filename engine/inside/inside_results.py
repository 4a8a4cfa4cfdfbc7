"""Inside's results, as frozen dataclasses of plain values: one per view the engine
computes at one step of a run (`InspectRecord.what`, engine/inside/inspect_request.WHATS).

`InspectRecord.data` is one of these (built in engine/backends/mlx/inspect_step.py
and journey.py); the Inside window, the tour and the command line read it by
attribute. It crosses the engine's process pipe as itself; `to_dict()` is what
`logitscope inspect --json` prints under "data" (the keys these fields are named
after), and `result_from(what, data)` rebuilds one from that JSON.

Token ids name tokens through `token_labels` (JSON keys are strings: `label(i)`
reads it for an int id). Tokens are (id, label, bytes) triples and candidates
(id, …) tuples, as in the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from engine.plain_data import PlainTuples


@dataclass(frozen=True)
class _Step(PlainTuples):
    """What every view says of the step: how much of the context the pass read."""

    truncated: bool  # only the last MAX_POSITIONS tokens of the context were read
    context_tokens: int  # the whole context, before truncation
    chosen: int | None  # the token the run took at this step (None: the prompt alone)
    reading: bool  # the step of a read (the text scored), not of an answer


class _Labels:
    """A result that names tokens by id in `token_labels` (str(id) -> label)."""

    token_labels: dict

    def label(self, token_id: int) -> str:
        """The label of a token the result names."""
        return self.token_labels[str(token_id)]


# -- the logit lens -------------------------------------------------------------------
@dataclass(frozen=True)
class LensRow(PlainTuples):
    """One layer's prediction: its top tokens (id, p), the chosen token's p and rank."""

    top: tuple[tuple[int, float], ...]
    chosen_prob: float | None = None  # None: no token chosen (the prompt alone)
    chosen_rank: int | None = None


@dataclass(frozen=True)
class LensResult(_Step, _Labels):
    """The logit lens at the step's last position: one row per layer."""

    rows: tuple[LensRow, ...]
    token_labels: dict  # str(id) -> label, for every id the rows name
    nested: ClassVar[dict] = {"rows": LensRow}


# -- attention ------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionResult(_Step):
    """One layer's attention weights: query tokens x key tokens."""

    layer: int
    head: int | None  # None: the mean of heads
    weights: tuple[tuple[float, ...], ...]  # (T, T), rows summing to 1
    query_row_by_head: tuple[tuple[float, ...], ...]  # (heads, T): the last query's row


# -- attention by position ------------------------------------------------------------
@dataclass(frozen=True)
class PositionResult(_Step):
    """The last query's attention along the context (engine/backends/mlx/position.py):
    per position, averaged over heads, and summed in bins by name."""

    mean: tuple[float, ...]  # (T,) the mean of layers
    by_layer: tuple[tuple[float, ...], ...]  # (L, T)
    bins: dict  # bin name -> mass (mean of layers)
    bins_by_layer: tuple[dict, ...]  # per layer: bin name -> mass
    edges: dict  # bin name -> (start, end), half-open
    prompt_tokens: int  # how many of the positions are the prompt

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "edges", {k: tuple(v) for k, v in self.edges.items()})


# -- the journey of one token ----------------------------------------------------------
@dataclass(frozen=True)
class Tokenization(PlainTuples):
    """1: the context as (id, label, bytes) triples, the chosen token appended."""

    tokens: tuple[tuple, ...]
    prompt_tokens: int
    new: int | None  # the index of the new token in `tokens` (None: the prompt alone)


@dataclass(frozen=True)
class Embedding(PlainTuples):
    """2: the last input token's row of the embedding table and its nearest rows."""

    token_id: int
    values: tuple[float, ...]
    norm: float
    neighbours: tuple[tuple[int, float], ...]  # (id, cosine), most similar first


@dataclass(frozen=True)
class LayerChange(PlainTuples):
    """3-4: one block's residual norms and ‖Δh‖/‖h‖ of attention and feed-forward (None
    where the feed-forward module could not be found by name)."""

    layer: int
    norm_in: float
    norm_out: float
    attention: float | None = None
    ffn: float | None = None
    attention_norm: float | None = None
    ffn_norm: float | None = None


@dataclass(frozen=True)
class ChosenToken(PlainTuples):
    """The chosen token in the final distribution."""

    token_id: int
    logit: float
    prob: float
    rank: int


@dataclass(frozen=True)
class LensStep(PlainTuples):
    """The top token after one layer, and the chosen token's rank and p there."""

    top: int
    chosen_rank: int | None = None
    chosen_prob: float | None = None


@dataclass(frozen=True)
class Projection(PlainTuples):
    """5: the final distribution's top (id, logit, p), the chosen token, its lens."""

    top: tuple[tuple[int, float, float], ...]
    chosen: ChosenToken | None
    lens: tuple[LensStep, ...]
    nested: ClassVar[dict] = {"chosen": ChosenToken, "lens": LensStep}


@dataclass(frozen=True)
class FunnelStage(PlainTuples):
    """One stage of the sampler (engine/backends/mlx/funnel.py): tokens and mass kept,
    the chosen token's p and rank (rank None with a p: the stage removed it)."""

    stage: str
    detail: str
    tokens: int
    mass: float
    chosen_prob: float | None = None
    chosen_rank: int | None = None


@dataclass(frozen=True)
class Sampling(PlainTuples):
    """6: the sampler's stages in mlx-lm's order."""

    greedy: bool
    order: str
    stages: tuple[FunnelStage, ...]
    nested: ClassVar[dict] = {"stages": FunnelStage}


@dataclass(frozen=True)
class Iteration(PlainTuples):
    """7: the token appended: the context, the KV cache's bytes, what comes next."""

    context_tokens: int
    context_length: int
    kv_bytes_before: int
    kv_bytes_added: int
    kv_layers_full: int  # sliding-window layers whose full cache overwrote its oldest entry
    stop_token: bool
    length_limit: bool
    next_step: int | None


@dataclass(frozen=True)
class JourneyResult(_Step, _Labels):
    """The seven steps of inference at one step (engine/backends/mlx/journey.py)."""

    tokenization: Tokenization
    embedding: Embedding
    layers: tuple[LayerChange, ...]
    projection: Projection
    sampling: Sampling
    iteration: Iteration
    token_labels: dict  # str(id) -> label, for every id the sections name
    nested: ClassVar[dict] = {
        "tokenization": Tokenization,
        "embedding": Embedding,
        "layers": LayerChange,
        "projection": Projection,
        "sampling": Sampling,
        "iteration": Iteration,
    }

    def as_read(self, order: str, step: int | None, tokens: int) -> JourneyResult:
        """The journey of a read's step: one sampling stage (the raw distribution the
        read scored, explained by `order`); the read goes on to the text's next token and
        ends with the text (`tokens` long): no stop token and no length limit."""
        sampling = replace(
            self.sampling, greedy=False, order=order, stages=self.sampling.stages[:1]
        )
        iteration = self.iteration
        if step is not None:
            last = step + 1 >= tokens
            iteration = replace(
                iteration,
                stop_token=False,
                length_limit=last,
                next_step=None if last else step + 1,
            )
        return replace(self, sampling=sampling, iteration=iteration, reading=True)


InsideResult = LensResult | AttentionResult | PositionResult | JourneyResult
RESULTS = {
    "lens": LensResult,
    "attention": AttentionResult,
    "position": PositionResult,
    "journey": JourneyResult,
}  # InspectRecord.what -> its result class


def result_from(what: str, data) -> InsideResult:
    """The result of view `what` from its `to_dict()` (or the result itself).

    Raises:
        KeyError: an unknown view.
    """
    cls = RESULTS[what]
    return data if isinstance(data, cls) else cls.from_dict(data)


__all__ = [
    "RESULTS",
    "AttentionResult",
    "ChosenToken",
    "Embedding",
    "FunnelStage",
    "InsideResult",
    "Iteration",
    "JourneyResult",
    "LayerChange",
    "LensResult",
    "LensRow",
    "LensStep",
    "PositionResult",
    "Projection",
    "Sampling",
    "Tokenization",
    "result_from",
]
