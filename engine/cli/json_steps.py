"""Token records on their way to a `generate --json` consumer: each step once.

mlx_lm.server streams no log-probabilities: the remote backend streams its text
first (stand-in ids, no log-probabilities, context counts without the prompt),
then re-sends every step with the real numbers from a second pass. A consumer of
`--json` cannot tell a re-sent step from a new one, so for such a server the
streamed pass is held back and each step is printed once, with the real numbers,
just before the `done` record (the window still shows the text live). A step
re-sent anyway (a server known to be mlx_lm.server only once its answer streamed,
when its model list failed) is printed with `"revision": true`.
"""

from __future__ import annotations

from engine.run.records import ModelRecord, Record, TokenRecord
from engine.run.run_result import add_token


def resends_steps(model: ModelRecord, top_n: int) -> bool:
    """Whether a run on `model` re-sends its steps after the answer.

    Args:
        model: the run's model record.
        top_n: the run's top_n (0: no log-probabilities asked for, nothing re-sent).

    Returns:
        True for mlx_lm.server asked for log-probabilities.
    """
    from engine.backends.openai.catalogue import FLAVOURS

    return (
        model.backend == "openai"
        and model.device.startswith(f"{FLAVOURS['mlx_lm']} at ")
        and top_n > 0
    )


class JsonSteps:
    """Decides when each record is printed: `feed(record)` gives the records to print
    now, each token record paired with whether it revises a step already printed."""

    def __init__(self, top_n: int):
        self.top_n = top_n
        self.hold = False  # the model re-sends its steps: print them at the end
        self.held: list[TokenRecord] = []
        self.printed = 0  # steps printed so far (the highest step + 1)

    def feed(self, record: Record) -> list[tuple[Record, bool]]:
        """The records to print now for `record`, each with its revision mark.

        Args:
            record: the next record from the engine.

        Returns:
            (record, revision) pairs, in order; revision is True for a token record
            whose step was printed before.
        """
        if record.type == "model":
            self.hold = resends_steps(record, self.top_n)
        if record.type == "token":
            if self.hold:
                add_token(self.held, record)  # a re-sent step supersedes the held one
                return []
            return [self._token(record)]
        if record.type in ("done", "error"):
            out = [self._token(t) for t in self.held]
            self.held = []
            return [*out, (record, False)]
        return [(record, False)]

    def _token(self, record: TokenRecord) -> tuple[TokenRecord, bool]:
        revision = record.step < self.printed
        self.printed = max(self.printed, record.step + 1)
        return record, revision
