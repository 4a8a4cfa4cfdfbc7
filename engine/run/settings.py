"""Sampling settings of one run: a frozen dataclass with named defaults and a
`validate()` that turns nonsense values into a clear SettingsError."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace

from engine.errors import SettingsError

DEFAULT_TEMPERATURE = 0.7
DEFAULT_TOP_P = 1.0
DEFAULT_TOP_K = 0
DEFAULT_MIN_P = 0.0
DEFAULT_REPETITION_PENALTY = 1.0
DEFAULT_REPETITION_CONTEXT = 20
DEFAULT_MAX_TOKENS = 256
DEFAULT_TOP_N = 10  # alternatives recorded per step
MAX_TOP_N = 50
MAX_TOP_K = 1_000_000  # more than any vocabulary: a larger top-k is a typo
MAX_LENS_TOP = 50  # predictions per layer the logit lens keeps (inspect --top-k)
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**63 - 1
COMPUTE_PREFERENCES = ("auto", "speed", "memory")  # how a local quantized model runs
BIT_WIDTHS = (2, 3, 4, 5, 6, 8)  # the widths MLX quantizes to (lab variants, drafts)
DEFAULT_PREFILL_CHUNK = 512  # most tokens per prefill step (chunks adapt to ~0.5 s each)


@dataclass(frozen=True)
class SamplingSettings:
    """Everything that decides which tokens a run produces.

    Values are checked by `validate()`, not when the dataclass is made.

    Attributes:
        temperature: 0 (greedy) .. 2.
        top_p: nucleus filter in (0, 1]; 1 is off.
        top_k: keep the k most likely tokens; 0 is off.
        min_p: drop tokens below min_p x the top probability; 0 is off.
        repetition_penalty: in (0, 10]; 1 is off.
        max_tokens: most tokens generated.
        seed: the sampler's seed; None draws one (the done record says which).
        stop: strings that end the answer.
        system_prompt: a system message put before the prompt (None or '': none added).
        chat_template: wrap the prompt in the model's chat template.
        top_n: alternatives recorded per step (1..50).
        prefill_chunk: most prompt tokens per prefill step.
        prompt_cache: reuse the previous run's KV cache for a common prefix.
    """

    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    top_k: int = DEFAULT_TOP_K
    min_p: float = DEFAULT_MIN_P
    repetition_penalty: float = DEFAULT_REPETITION_PENALTY
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int | None = None
    stop: tuple[str, ...] = field(default_factory=tuple)
    system_prompt: str | None = None
    chat_template: bool = True
    top_n: int = DEFAULT_TOP_N
    prefill_chunk: int = DEFAULT_PREFILL_CHUNK
    # Reuse the previous run's KV cache for a common prefix: the playground turns it on;
    # off (every run prefills its whole prompt) is the exact, comparable default.
    prompt_cache: bool = False

    def validate(self) -> SamplingSettings:
        """Check every value's type and range.

        Returns:
            self, unchanged.

        Raises:
            SettingsError: the first bad value, named with its allowed range.
        """
        _check(
            _finite(self.temperature) and 0 <= self.temperature <= MAX_TEMPERATURE,
            f"temperature must be between 0 and {MAX_TEMPERATURE:g} "
            f"(0 = greedy), got {self.temperature}",
        )
        _check(
            _finite(self.top_p) and 0 < self.top_p <= 1,
            f"top-p must be in (0, 1] (1 = off), got {self.top_p}",
        )
        _check(
            _count(self.top_k) and 0 <= self.top_k <= MAX_TOP_K,
            f"top-k must be a whole number from 0 to {MAX_TOP_K} (0 = off), got {self.top_k}",
        )
        _check(
            _finite(self.min_p) and 0 <= self.min_p < 1,
            f"min-p must be in [0, 1) (0 = off), got {self.min_p}",
        )
        _check(
            _finite(self.repetition_penalty) and 0 < self.repetition_penalty <= 10,
            f"repetition penalty must be in (0, 10] (1 = off), got {self.repetition_penalty}",
        )
        _check(
            _count(self.max_tokens) and self.max_tokens >= 1,
            f"max tokens must be a whole number >= 1, got {self.max_tokens}",
        )
        _check(
            self.seed is None
            or (
                isinstance(self.seed, int)
                and not isinstance(self.seed, bool)
                and 0 <= self.seed <= MAX_SEED
            ),
            f"seed must be a whole number from 0 to {MAX_SEED}, got {self.seed}",
        )
        _check(
            all(isinstance(s, str) and s for s in self.stop),
            "stop strings must be non-empty text",
        )
        _check(
            _count(self.top_n) and 1 <= self.top_n <= MAX_TOP_N,
            f"alternatives per step must be between 1 and {MAX_TOP_N}, got {self.top_n}",
        )
        _check(
            _count(self.prefill_chunk) and self.prefill_chunk >= 1,
            f"prefill chunk must be >= 1, got {self.prefill_chunk}",
        )
        return self

    def to_dict(self) -> dict:
        """The settings as a JSON-ready dict (`stop` as a list).

        Returns:
            One key per field.
        """
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SamplingSettings:
        """Settings from a dict such as `to_dict()` gives; unknown keys are ignored.

        Not validated: call `validate()`.

        Args:
            d: field names to values; missing fields keep their defaults.

        Returns:
            The settings.
        """
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in known}
        if "stop" in kwargs:
            kwargs["stop"] = tuple(kwargs["stop"] or ())
        return cls(**kwargs)

    def with_(self, **changes) -> SamplingSettings:
        """A copy with some fields changed (not validated).

        Args:
            **changes: field names to new values.

        Returns:
            The new settings.
        """
        return replace(self, **changes)


def _count(x) -> bool:
    """A whole number (a bool is not one, though Python calls it an int)."""
    return isinstance(x, int) and not isinstance(x, bool)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise SettingsError(message)
