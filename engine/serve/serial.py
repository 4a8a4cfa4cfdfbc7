"""One request at a time through the engine's own `generate_records` (max_batch=1):
the same records, prompt cache and seeds as `logitscope generate`."""

from __future__ import annotations

from engine.backends.mlx.generate import generate_records
from engine.serve.jobs import END, JobSource


def run_serial(scheduler: JobSource) -> None:
    """Run waiting jobs one after another until the server stops."""
    while not scheduler.stopping:
        for job in scheduler.take(block=True):
            try:
                run = scheduler.begin(job)
                outcome = "done"
                records = generate_records(
                    scheduler.lm, job.req.prompt, job.req.settings, job.cancelled.is_set
                )
                while True:
                    with scheduler.compute:  # each step: the other model of a route waits
                        record = next(records, None)
                    if record is None:
                        break
                    run.record(record)
                    job.put(record)
                    if record.type == "done" and record.finish_reason == "cancelled":
                        outcome = "cancelled"
                run.end(outcome)
                job.put(END)
            except Exception as e:  # noqa: BLE001 - told to the client, the server goes on
                scheduler.fail(job, e)
            finally:
                scheduler.finished()
