"""The scheduler's contract with its runners: a Job, the END that closes its queue,
and `JobSource`, what a runner may ask of the scheduler.

A runner (serial.py one request at a time, batch.py continuous batching) is a plain
function `runner(source)` that takes jobs from its JobSource, runs them on the model
thread, puts each record into the job and ends it with END; it never imports the
scheduler. The scheduler (scheduler.py) implements JobSource and picks the runner.
Nothing here knows about MLX, so the asyncio handlers and tests import it freely.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Protocol

from engine.serve.events import ClientInfo
from engine.serve.runs import ServedRun
from engine.serve.validation import ServeRequest

END = object()  # the last item of a Job's queue


class Job:
    """One request on its way through the scheduler.

    Created on the event loop's thread; the scheduler `put`s records (then an
    ApiError on failure) and END into `queue` from its own thread.
    """

    def __init__(self, req: ServeRequest, request_id: str, client: ClientInfo):
        self.req, self.request_id, self.client = req, request_id, client
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        self.cancelled = threading.Event()
        self.run: ServedRun | None = None

    def put(self, item) -> None:
        """Hand an item to the request's handler (from any thread)."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: the server is stopping
            self.cancelled.set()

    def cancel(self) -> None:
        """The client left: stop at the next token."""
        self.cancelled.set()


class JobSource(Protocol):
    """What a runner is given: the model, the jobs to run, and where each one ends."""

    lm: object  # the loaded model (a LoadedModel, engine/backends/mlx/generate.py)
    max_batch: int  # at most this many jobs run at once
    compute: object  # a lock held around each model step (shared by a route's two models)

    @property
    def stopping(self) -> bool:
        """The server is shutting down: the runner returns."""
        ...

    def take(self, block: bool) -> list[Job]:
        """Waiting jobs for free batch slots (blocks for one when `block`).

        Args:
            block: wait until a job arrives (or the server stops) when none waits.

        Returns:
            The jobs to start now, each counted as running until `finished`.
        """
        ...

    def begin(self, job: Job) -> ServedRun:
        """Start `job`'s run in the journal; the runner records into it.

        Args:
            job: a job from `take`.

        Returns:
            Its ServedRun (also set as `job.run`).
        """
        ...

    def fail(self, job: Job, error: Exception) -> None:
        """End `job` with an error the client sees (its run ended, END put).

        Args:
            job: the job that failed.
            error: what went wrong (a SettingsError is the client's own).
        """
        ...

    def finished(self, n: int = 1) -> None:
        """`n` running jobs ended (done, cancelled or failed).

        Args:
            n: how many.
        """
        ...
