"""The engine process: the only place MLX runs.

`worker_main` is the child process's entry point. Requests arrive as dicts on
`requests`; every reply is a dict `{"id": request_id, "record": {...}}` (or
`{"id": ..., "reply": {...}}` for small queries) on `events`. A reader thread
receives requests so that a cancel reaches a generation in progress: the loop
checks the flag between prefill chunks and between tokens.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import traceback

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class _Worker:
    def __init__(self, events):
        self.events = events
        self.models: dict[str, tuple] = {}  # resolved path -> (LoadedModel, record)
        self.cancelled: set[int] = set()
        self.lock = threading.Lock()

    def send(self, rid: int, **msg) -> None:
        self.events.send({"id": rid, **msg})

    def send_record(self, rid: int, record) -> None:
        from engine.records import to_dict

        self.send(rid, record=to_dict(record))

    def model(self, rid: int, spec: str | None):
        """Resolve and load `spec` (cached), reporting progress and the model."""
        from engine.models import device_name, load_model, resolve_model
        from engine.records import ModelRecord, ProgressRecord

        def progress(message, fraction):
            self.send_record(rid, ProgressRecord(message, fraction))

        folder = resolve_model(spec, progress)
        key = str(folder.resolve())
        if key not in self.models:
            progress(f"Loading {folder.name}…", 0.95)
            self.models.clear()  # one model in memory at a time
            lm, info, seconds = load_model(folder)
            record = ModelRecord(device=device_name(), load_s=seconds, **vars(info))
            self.models[key] = (lm, record)
        lm, record = self.models[key]
        self.send_record(rid, record)
        return lm

    def handle(self, msg: dict) -> None:
        from engine.errors import LogitscopeError, ModelError, SettingsError
        from engine.records import ErrorRecord

        rid = msg["id"]
        try:
            getattr(self, "op_" + msg["op"])(rid, msg)
        except LogitscopeError as e:
            kind = {ModelError: "model", SettingsError: "settings"}.get(type(e), "error")
            self.send_record(rid, ErrorRecord(str(e), kind))
        except Exception as e:  # a bug: keep the process, report it plainly
            traceback.print_exc(file=sys.stderr)
            self.send_record(rid, ErrorRecord(f"internal error: {type(e).__name__}: {e}"))

    def op_load(self, rid: int, msg: dict) -> None:
        self.model(rid, msg.get("model"))

    def op_generate(self, rid: int, msg: dict) -> None:
        from engine.generate import generate_records
        from engine.settings import SamplingSettings

        settings = SamplingSettings.from_dict(msg["settings"]).validate()
        lm = self.model(rid, msg.get("model"))
        stop = lambda: rid in self.cancelled  # noqa: E731
        for record in generate_records(lm, msg["prompt"], settings, stop):
            self.send_record(rid, record)


def worker_main(requests, events) -> None:
    """Serve requests until 'shutdown' or the client goes away."""
    worker = _Worker(events)
    work: queue.Queue = queue.Queue()

    def reader():
        while True:
            try:
                msg = requests.recv()
            except (EOFError, OSError):
                work.put(None)
                return
            if msg["op"] == "cancel":
                worker.cancelled.add(msg["target"])
            elif msg["op"] == "shutdown":
                work.put(None)
                return
            else:
                work.put(msg)

    threading.Thread(target=reader, daemon=True, name="requests").start()
    while (msg := work.get()) is not None:
        try:
            worker.handle(msg)
        except (BrokenPipeError, EOFError, OSError):
            return  # the client is gone
        worker.cancelled.discard(msg["id"])
