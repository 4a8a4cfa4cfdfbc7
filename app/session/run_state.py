"""RunState: everything the views show about one run, without Qt.

Token records are appended as they arrive; per-step series live in
preallocated NumPy buffers (grown by doubling) that charts feed to `setData`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from engine.run.records import TokenRecord
from engine.run.run_kind import answer_tokens
from engine.run.run_result import RunResult, add_token
from engine.run.settings import SamplingSettings


@dataclass
class RunState(RunResult):
    """A run as the views see it: the engine's fold of its records, plus the prompt,
    settings, the selected step and per-step NumPy series for the charts."""

    prompt: str = ""
    settings: SamplingSettings = field(default_factory=SamplingSettings)
    selected: int | None = None  # step the charts show; None = follow the latest
    run_id: str | None = None  # its id in the session journal
    estimated_prompt: tuple[int, int] | None = None  # (tokens, system) counted by the window
    earlier: list = field(default_factory=list)  # (answer start, end) of earlier turns
    kv_growth: list = field(default_factory=list)  # KV cache bytes after each earlier turn
    sent: object = None  # what the engine was sent (a conversation's messages), if not `prompt`
    branch: dict | None = None  # a branch: {"parent" run id, "step", "kind"} (journal field)
    reading: bool = False  # a text read through the model (engine/reading), not generated
    runs_on: str | None = None  # a model other than the loaded one (the right-sized escalation)
    route: object = None  # app/session/right_size.RouteNote: what the cascade did on its turn
    _cap: int = 256

    def __post_init__(self):
        self.prob = np.zeros(self._cap)
        self.entropy = np.zeros(self._cap)
        self.elapsed = np.zeros(self._cap)
        self.latency = np.zeros(self._cap)

    @classmethod
    def from_run(cls, run) -> RunState:
        """The state of a journaled run (an engine.sessions RunLog), to show it again."""
        sent = [*run.messages, {"role": "user", "content": run.prompt}] if run.messages else None
        state = cls(
            prompt=run.prompt,
            settings=SamplingSettings.from_dict(run.settings),
            model=run.model_record,
            run_id=run.run_id,
            branch=run.branch,
            sent=sent,
        )
        state.add_tokens(run.tokens)
        state.done, state.error, state.prefill = run.done, run.error, run.last_prefill
        state.reading = bool(run.tokens and run.tokens[0].read) or bool(
            run.done is not None and run.done.reading is not None
        )
        return state

    def end(self, record) -> None:
        """The run ended with `record` (a DoneRecord or an ErrorRecord)."""
        if record.type == "error":
            self.error = record
        else:
            self.done = record

    def name(self, run_id: str | None) -> None:
        """The journal gave the run its id (None: the history could not be written)."""
        self.run_id = run_id

    def ran_on(self, model) -> None:
        """The engine reported the model the run runs on (a ModelRecord)."""
        self.model = model

    @property
    def engine_prompt(self):
        """The prompt as the engine saw it: the conversation up to this turn, or the text."""
        return self.sent if self.sent is not None else self.prompt

    @property
    def n(self) -> int:
        return len(self.tokens)

    def add_tokens(self, records: list[TokenRecord]) -> None:
        needed = self.n + len(records)
        if needed > self._cap:
            while self._cap < needed:
                self._cap *= 2
            for name in ("prob", "entropy", "elapsed", "latency"):
                old = getattr(self, name)
                new = np.zeros(self._cap)
                new[: len(old)] = old
                setattr(self, name, new)
        for r in records:
            add_token(self.tokens, r)  # a backend may re-send tokens from a step on
            i = self.n - 1
            self.prob[i] = math.nan if r.prob is None else r.prob  # NaN: not reported
            self.entropy[i] = math.nan if r.entropy is None else r.entropy
            self.elapsed[i], self.latency[i] = r.elapsed_s, r.latency_s

    @property
    def current_step(self) -> int | None:
        """The selected step, or the latest one while following the stream."""
        if self.selected is not None and self.selected < self.n:
            return self.selected
        return self.n - 1 if self.tokens else None

    @property
    def current(self) -> TokenRecord | None:
        step = self.current_step
        return self.tokens[step] if step is not None else None

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)

    def can(self, capability: str) -> bool:
        """Whether this run's backend reports `capability` (see engine.run.records)."""
        return self.model is None or self.model.can(capability)

    @property
    def remote(self) -> bool:
        return self.model is not None and self.model.backend != "mlx"

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens (0 while unknown: a server that does not report them)."""
        if self.done is not None:
            return self.done.prompt_tokens or 0
        if self.prefill is not None:  # a branch's prefill counts its shared prefix too
            return self.prefill.total - (self.branch_step or 0)
        return self.estimated_prompt[0] if self.estimated_prompt else 0

    @property
    def branch_step(self) -> int | None:
        """The answer step a branch continued from (None: not a branch)."""
        return self.branch["step"] if self.branch else None

    @property
    def forced_steps(self) -> int:
        """How many tokens the person chose (forced) rather than the model."""
        return sum(1 for t in self.tokens if getattr(t, "forced", False))

    @property
    def system_tokens(self) -> int:
        if self.done is not None:
            return self.done.system_tokens
        if self.prefill is not None:
            return self.prefill.system_tokens
        return self.estimated_prompt[1] if self.estimated_prompt else 0

    @property
    def output_steps(self) -> int:
        """The answer's tokens in the context: engine.run.run_kind.answer_tokens, the one
        count every view gives (the end-of-sequence step not counted)."""
        return answer_tokens(self.tokens)
