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
        self.backends: dict = {}  # kind -> Backend (each keeps its own model)
        self.cancelled: set[int] = set()

    def send(self, rid: int, **msg) -> None:
        self.events.send({"id": rid, **msg})

    def send_record(self, rid: int, record) -> None:
        from engine.records import to_dict

        self.send(rid, record=to_dict(record))

    def backend(self, rid: int, msg: dict):
        """The backend for the request's model spec, with that model loaded."""
        from engine.backends.base import backend_kind, open_backend
        from engine.records import ProgressRecord

        spec = msg.get("model")
        kind = backend_kind(spec)
        if kind not in self.backends:
            self.backends[kind] = open_backend(kind)
        backend = self.backends[kind]
        if kind == "mlx":  # one local model in memory at a time; servers cost nothing
            for other in self.backends.values():
                if other is not backend:
                    other.close()
        if msg.get("api_key") is not None:
            backend.api_key = msg["api_key"]
        if msg.get("prefer") in ("auto", "speed", "memory") and hasattr(backend, "prefer"):
            backend.prefer = msg["prefer"]

        def progress(message, fraction):
            self.send_record(rid, ProgressRecord(message, fraction))

        self.send_record(rid, backend.load(spec, progress))
        return backend

    def handle(self, msg: dict) -> None:
        from engine.errors import LogitscopeError, ModelError, SettingsError
        from engine.records import ErrorRecord

        rid = msg["id"]
        try:
            getattr(self, "op_" + msg["op"])(rid, msg)
        except LogitscopeError as e:
            kind = {ModelError: "model", SettingsError: "settings"}.get(type(e), "error")
            self.send_record(rid, ErrorRecord(str(e), getattr(e, "kind", None) or kind))
        except Exception as e:  # a bug: keep the process, report it plainly
            traceback.print_exc(file=sys.stderr)
            self.send_record(rid, ErrorRecord(f"internal error: {type(e).__name__}: {e}"))

    def op_load(self, rid: int, msg: dict) -> None:
        self.backend(rid, msg)

    def op_generate(self, rid: int, msg: dict) -> None:
        from engine.settings import SamplingSettings

        settings = SamplingSettings.from_dict(msg["settings"]).validate()
        backend = self.backend(rid, msg)
        stop = lambda: rid in self.cancelled  # noqa: E731
        for record in backend.generate(msg["prompt"], settings, stop):
            self.send_record(rid, record)

    def op_inspect(self, rid: int, msg: dict) -> None:
        from engine.errors import SettingsError
        from engine.settings import SamplingSettings

        settings = SamplingSettings.from_dict(msg["settings"]).validate()
        backend = self.backend(rid, msg)
        if not hasattr(backend, "inspect"):
            raise SettingsError(
                "looking inside the model needs its weights: open a local model "
                "(a server reports only the tokens it chose)"
            )
        record = backend.inspect(msg["prompt"], settings, msg["request"])
        if rid in self.cancelled:  # asked to stop while the pass ran: nothing to show
            raise SettingsError("cancelled")
        self.send_record(rid, record)

    def op_lab(self, rid: int, msg: dict) -> None:
        from engine.errors import SettingsError
        from engine.records import LabRecord, ProgressRecord
        from engine.settings import SamplingSettings

        settings = SamplingSettings.from_dict(msg["settings"]).validate()
        backend = self.backend(rid, msg)
        if not hasattr(backend, "lab"):
            raise SettingsError("the lab needs the model's weights: open a local model")

        def progress(message, fraction):
            self.send_record(rid, ProgressRecord(message, fraction))

        data = backend.lab(msg["kind"], msg["prompt"], settings, msg.get("params", {}), progress)
        self.send_record(rid, LabRecord(msg["kind"], data))


def worker_main(requests, events) -> None:
    """Serve requests until 'shutdown' or the client goes away."""
    from engine.backends.base import prepare_process

    prepare_process()  # e.g. an optimised BLAS for MLX's CPU build, before MLX loads
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
