"""The one thread that runs the model, and the bounded queue in front of it.

MLX is used from this thread only, each model step under `compute`, a lock that
`serve --route`'s two schedulers (the small and the large model's) share: overlapping
requests never run both models at once, which would only split the same cores between
them (and MLX is thread-safe only since 0.31.2). The asyncio handlers `submit` a Job (or are
told at once that the queue is full) and read its records from the Job's own
asyncio queue; closing a request sets the Job's `cancelled` flag, which the
decode checks between tokens, and the run ends as "cancelled" in the journal.

Requests run `batch.py`'s continuous batching (up to `max_batch` decoded
together); `max_batch=1` runs them one at a time through the engine's own
`generate_records`, the exact path `logitscope generate` takes. Both runners know
the scheduler only as the JobSource of jobs.py, the contract they share; the
scheduler imports them, never the other way round.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections import deque

from engine.errors import SettingsError
from engine.serve.errors import ApiError
from engine.serve.jobs import END, Job
from engine.serve.runs import ServedRun

DEFAULT_BATCH = 8
DEFAULT_QUEUE = 32


class QueueFull(Exception):
    """Every batch slot and queue place is taken: answer 429."""

    def __init__(self, retry_after: int):
        super().__init__("the server is busy")
        self.retry_after = retry_after


class Scheduler:
    """Runs Jobs on one thread: at most `max_batch` at once, `max_queue` waiting.

    It is the JobSource (jobs.py) its runner takes jobs from.
    """

    def __init__(
        self,
        lm,
        model: dict,
        journal,
        max_batch=DEFAULT_BATCH,
        max_queue=DEFAULT_QUEUE,
        compute: threading.Lock | None = None,
    ):
        """`compute`: the lock held around each model step; a route's two schedulers
        share one, so the small and the large model never compute at once."""
        self.lm, self.model, self.journal = lm, model, journal
        self.compute = compute if compute is not None else threading.Lock()
        self.max_batch, self.max_queue = max(1, max_batch), max(0, max_queue)
        self.waiting: deque[Job] = deque()
        self.running = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="serve-scheduler", daemon=True)

    def start(self) -> None:
        """Start the model thread."""
        self._thread.start()

    def stop(self) -> None:
        """Cancel everything and end the model thread."""
        with self._cond:
            self._stopping = True
            for job in self.waiting:
                job.cancel()
                job.put(END)
            self.waiting.clear()
            self._cond.notify_all()
        self._thread.join(timeout=30)

    def submit(self, job: Job) -> None:
        """Queue a job.

        Raises:
            QueueFull: the batch and the queue are full (with a Retry-After guess).
        """
        with self._cond:
            if self.running + len(self.waiting) >= self.max_batch + self.max_queue:
                raise QueueFull(retry_after=1 + len(self.waiting) // self.max_batch)
            self.waiting.append(job)
            self._cond.notify_all()

    def take(self, block: bool) -> list[Job]:
        """Waiting jobs for free batch slots (blocks for one when `block`)."""
        with self._cond:
            while block and not self.waiting and not self._stopping:
                self._cond.wait()
            jobs = []
            while self.waiting and self.running + len(jobs) < self.max_batch:
                job = self.waiting.popleft()
                if job.cancelled.is_set():  # left while queued: nothing was run
                    job.put(END)
                    continue
                jobs.append(job)
            self.running += len(jobs)
            return jobs

    def finished(self, n: int = 1) -> None:
        """`n` running jobs ended."""
        with self._cond:
            self.running -= n

    @property
    def stopping(self) -> bool:
        """The server is shutting down."""
        return self._stopping

    def begin(self, job: Job) -> ServedRun:
        """The job's run in the journal (and the live "started" event)."""
        job.run = ServedRun(
            self.journal, job.request_id, job.req.prompt, job.req.settings, job.client, self.model
        )
        return job.run

    def fail(self, job: Job, error: Exception) -> None:
        """End a job with an error the client sees (never a traceback)."""
        if isinstance(error, SettingsError):
            api = ApiError(400, str(error), code="invalid_value")
        else:
            traceback.print_exception(error, file=sys.stderr)
            api = ApiError(500, "the server failed to answer this request", kind="server_error")
        if job.run is not None:
            from engine.run.records import ErrorRecord

            job.run.record(ErrorRecord(api.message, "settings" if api.status == 400 else "error"))
            job.run.end("error")
        job.put(api)
        job.put(END)

    def _loop(self) -> None:
        # imported here, on the model thread: both runners import MLX, and the CLI
        # imports this module (for its defaults) before any model is wanted
        if self.max_batch == 1:
            from engine.serve.serial import run_serial as body
        else:
            from engine.serve.batch import run_batched as body
        while not self._stopping:
            try:
                body(self)
            except Exception:  # noqa: BLE001 - a bug: said on stderr, the server goes on
                traceback.print_exc(file=sys.stderr)
