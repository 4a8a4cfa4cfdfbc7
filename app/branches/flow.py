"""BranchFlow: continue the answer on screen from any step, with another token or N
sampled futures.

"Continue with ' X' from step K" runs the same prompt again from the answer's first K
tokens with ' X' forced at step K (the engine reuses their KV cache, see
engine/run/continuation.py); "Sample N from step K" runs N continuations at the current
temperature with seeds S, S+1, … (S: the locked seed, else a random one), one after
another. Each is a branch: a sibling run of the turn with its parent (run, step),
journaled and drawn in the Branches view. The rules are the Session's
(app/session/session.py); this class adds the settings, the engine and the messages.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from app.core.session_signals import SessionSignals
from app.session.run_state import RunState
from app.session.session import SampleBatch
from engine.errors import SettingsError
from engine.run.continuation import SAMPLE_N, continuation_from


@dataclass
class BranchUi:
    """What the flow may ask of the window (plain callables)."""

    show_error: Callable[[str], None]
    hide_error: Callable[[], None]
    show_notice: Callable[[str], None]
    # (state, prompt, journal info, continuation, the parent's tokens)
    start_run: Callable[..., None]


class BranchFlow:
    def __init__(self, model: SessionSignals, bridge, controls, ui: BranchUi):
        self.model, self.bridge, self.controls, self.ui = model, bridge, controls, ui

    @property
    def session(self):
        return self.model.session

    def why_not(self) -> str | None:
        """Why the run on screen cannot be branched now (None: it can)."""
        s = self.session
        state = s.shown
        if self.bridge.busy:
            return "Wait for the current run to finish (or stop it) before branching."
        if not state.tokens:
            return "Run a prompt first: a branch continues an answer from one of its tokens."
        if state.reading:
            return (
                "A text read through the model has no branches: copy the text up to that "
                "token into the prompt box and run it in raw completion mode to see what "
                "the model would write there."
            )
        if state.remote and state.settings.chat_template:
            return (
                "A server's chat answer cannot be continued from a step: the server applies "
                "its own chat template to whole messages. Run the prompt in raw completion "
                "mode to branch it on the server, or use a local model."
            )
        if not state.remote and any(t.token_id < 0 for t in state.tokens):
            return "This run's token ids are unknown, so it cannot be continued from a step."
        if s.guest is not None:
            return (
                f"This run is shown from {s.guest.source}, read-only: choose Continue from "
                "here (above the answer) to make it yours and branch it."
            )
        if s.shown_answer() is None:
            return "This run is not part of the conversation on screen: reopen it from History."
        loaded, own = s.model, state.model
        if loaded is None or (own is not None and own.path != loaded.path):
            name = own.name if own is not None else "another model"
            return f"This run was made with {name}: load it in the model picker to branch."
        return None

    def _settings(self, parent: RunState, **changes):
        """The current sampling settings, with the parent's prompt-shaping ones (system
        prompt, chat template): the shared prefix must be the same tokens."""
        p = parent.settings
        return (
            self.controls.settings()
            .with_(
                system_prompt=p.system_prompt,
                chat_template=p.chat_template,
                prompt_cache=True,
                **changes,
            )
            .validate()
        )

    def branch(self, step: int, token_id: int | None = None, text: str | None = None) -> bool:
        """Continue the answer on screen from `step` with a token of the person's choice
        (by id, or as text that must be one vocabulary token)."""
        return self._start(step, "forced", token_id=token_id, text=text)

    def sample(self, step: int, n: int = SAMPLE_N) -> bool:
        """Run `n` continuations of the answer on screen from `step`, seeds S..S+n-1."""
        if (why := self.why_not()) is not None:
            self.ui.show_error(why)
            return False
        locked = self.controls.seed_lock.isChecked()
        first = self.controls.seed.value() if locked else random.randrange(2**31 - n)
        parent = self.session.shown_answer()
        self.session.start_sampling(SampleBatch(parent, step, [first + i for i in range(n)], n))
        return self._next_sample()

    def _next_sample(self) -> bool:
        batch, seed = self.session.sampling, self.session.next_sample_seed()
        if seed is None:
            return False
        self.ui.show_notice(f"Sampling future {batch.started} of {batch.total} (seed {seed})…")
        ok = self._start(batch.step, "sample", parent=batch.parent, seed=seed)
        if not ok:
            self.session.end_sampling()
        return ok

    def _start(self, step, kind, token_id=None, text=None, parent=None, seed=None) -> bool:
        if parent is None and (why := self.why_not()) is not None:
            self.ui.show_error(why)
            return False
        answer = parent or self.session.shown_answer()
        ps = answer.state
        try:
            settings = self._settings(ps, **({"seed": seed} if seed is not None else {}))
            cont = continuation_from(ps.tokens, step, token_id, text)
        except SettingsError as e:
            self.ui.show_error(str(e))
            return False
        self.ui.hide_error()
        state = RunState(prompt=ps.prompt, settings=settings, model=self.session.model)
        prompt, info = self.model.begin_branch(answer, step, kind, state)
        self.ui.start_run(state, prompt, info, cont, list(ps.tokens))
        return True

    def on_run_ended(self) -> None:
        """After a run: the next of a Sample N (stopped by Stop or a failed run)."""
        batch = self.session.sampling
        if batch is None:
            return
        shown = self.session.shown
        if shown.error is not None or (shown.done and shown.done.finish_reason == "cancelled"):
            self.session.end_sampling()
            self.ui.show_notice(f"Sample N stopped after {batch.started} of {batch.total}")
            return
        if batch.seeds:
            self._next_sample()
        else:
            self.session.end_sampling()
            self.ui.show_notice(f"Sampled {batch.total} futures from step {batch.step}")
            self.model.show_answer(self.session.shown_answer() or batch.parent)
