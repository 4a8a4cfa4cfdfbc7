"""What a lesson may ask of the window (the shell implements it: app/shell/tour_wiring.py).

Lessons never touch widgets: they start runs and experiments through these methods,
wait on their predicates, and read the records the session and the engine made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Sentence:
    """A lesson's closing sentence, computed from what just ran, and its numbers
    (so a test can compare them with the run's records)."""

    text: str
    numbers: dict = field(default_factory=dict)


class TourHost(Protocol):
    tiny: bool  # run the smallest experiments (fewer tokens, samples, batch sizes): tests

    def local(self) -> bool:
        """Whether the loaded model is a local MLX model (Inside and the Lab need one)."""

    def local_choice(self) -> str:
        """The local model a lesson that needs one offers to switch to."""

    def switch_to_local(self) -> bool:
        """Load `local_choice()` in place of the model in use. Returns whether it started."""

    def model_name(self) -> str:
        """The loaded model's name."""

    def run(
        self,
        prompt: str,
        *,
        mode: str = "raw",
        temperature: float = 0.0,
        max_tokens: int = 6,
        seed: int = 7,
        cold: bool = False,
    ) -> bool:
        """Start `prompt` in the playground as a new conversation (mode: chat | raw | read;
        cold: prefill it all, no prompt cache). Returns whether it started (else the window
        says why)."""

    def idle(self) -> bool:
        """Nothing runs in the playground (no run, no Sample N batch)."""

    def shown(self):
        """The run on screen (a RunState)."""

    def select(self, step: int | None) -> None:
        """Point the playground's answer and charts at `step` (None: the latest)."""

    def sample(self, step: int, n: int, temperature: float, seed: int) -> bool:
        """Sample `n` futures of the run on screen from `step` (the Branches tab)."""

    def samples(self) -> list:
        """The runs (RunStates) of the last Sample N of the turn on screen."""

    def branch(self, step: int, token_id: int) -> bool:
        """Continue the run on screen from `step` with `token_id` forced."""

    def inside(self, step: int | None, tab: str) -> None:
        """Open Inside the model on the run on screen at `step`, on `tab`."""

    def inside_record(self, what: str):
        """Inside's record for what it shows now if it is of kind `what`, else None."""

    def inside_idle(self) -> bool:
        """Inside computes nothing now."""

    def lab(self, params, prompt: str) -> bool:
        """Open the Lab on `params`' tab and run it on `prompt` (a tab with its own input,
        the Confidence tab's question set, leaves the playground's prompt and mode as they
        are). Returns whether it started."""

    def lab_result(self, kind: str):
        """The result of the lab experiment `kind` this tour started, once it is done."""

    def lab_idle(self) -> bool:
        """The Lab runs nothing now."""

    def distill_quick(self):
        """The Distillation tab's quick default: DistillParams for the loaded model against
        its own weights as stored, on the start of the shipped text."""

    def lab_tabs(self) -> tuple[str, ...]:
        """The Lab's experiment kinds (its tabs)."""

    def open_lab_tab(self, kind: str) -> None:
        """Open the Lab on the tab of experiment `kind`."""

    def second_model(self) -> str | None:
        """An installed local model other than the loaded one, the largest (None: none)."""

    def right_size(self, large: str | None, signal: str, threshold: float) -> None:
        """Answer with the right-sized model: `large` below `threshold` of `signal`
        (app/session/right_size.py); None turns it off."""

    def turn_runs(self) -> list:
        """The runs (RunStates) of the conversation's first turn: a right-sized turn's
        attempts, the small model's first."""

    def highlight(self, target: str) -> None:
        """Bring the view `target` (a Lesson's) to the front and frame it."""
