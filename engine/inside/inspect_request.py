"""What a person asks to see inside the model at one step: a frozen dataclass of
plain values that crosses the process pipe as itself (the window, `logitscope
inspect` and the engine's inspect_step read its fields, never string keys).

The values are checked where the model is known (engine/backends/mlx/inspect_step.py:
a view it has, a layer and head it has, a lens depth in range).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

WHATS = ("attention", "lens", "journey", "position")  # the views the engine computes
LENS_TOP = 5  # the lens's predictions per layer unless asked for more or fewer


@dataclass(frozen=True)
class InspectRequest:
    """One step of a run, inspected.

    Attributes:
        what: attention | lens | journey | position (WHATS).
        step: the answer's step (from 0); None: the prompt alone (its next token).
        layer: the attention heatmap's layer.
        head: the attention heatmap's head; None: the mean over heads.
        top_k: the logit lens's predictions per layer.
        continuation: the answer's token ids (step N reads the first N); None: the
            client produces the greedy answer first (EngineClient.inspect_answer).
        reading: the run is a text read through the model (engine/reading): the
            prompt is the text read and the settings' system prompt its context.
            The pass starts with the read's context (the system prompt, else the
            model's start token, as the read fed it), step N's prediction comes from
            it and the text's first N tokens, and the funnel is the read's (T = 1,
            no filter, no penalty): the numbers the read recorded for each token.
    """

    what: str
    step: int | None = None
    layer: int = 0
    head: int | None = None
    top_k: int = LENS_TOP
    continuation: tuple[int, ...] | None = None
    reading: bool = False

    def __post_init__(self):
        if self.continuation is not None:
            object.__setattr__(self, "continuation", tuple(self.continuation))

    def at(self, step: int | None, continuation) -> InspectRequest:
        """The same request at `step` of the answer `continuation` (token ids).

        Returns:
            A new request.
        """
        return replace(self, step=step, continuation=tuple(continuation))


__all__ = ["LENS_TOP", "WHATS", "InspectRequest"]
