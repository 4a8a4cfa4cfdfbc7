"""EngineClient: starts, talks to and supervises the engine process.

The client is plain Python (no Qt): `generate()` returns an iterator of records
and may be consumed on any thread; `cancel()` may be called from another one.
If the process dies mid-request, the iterator yields one ErrorRecord of kind
`engine_died` and ends. If it sends nothing for `hang_timeout_s` during a run
(`load_timeout_s` while a model is fetched, converted or loaded: those report
progress), it is killed and the iterator yields `engine_hung`. Either way the
records already received stand and the next request starts a fresh process.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import wait

from engine.records import ErrorRecord, Record, record_from_dict
from engine.settings import SamplingSettings

POLL_S = 0.05
HANG_TIMEOUT_S = 30.0  # silence allowed between records of a run
LOAD_TIMEOUT_S = 600.0  # silence allowed while a model is fetched, converted or loaded


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


class EngineClient:
    """One engine process, started on first use and restarted after a crash or hang."""

    def __init__(self, hang_timeout_s: float | None = None, load_timeout_s: float | None = None):
        self.hang_timeout_s = hang_timeout_s or _env_seconds(
            "LOGITSCOPE_ENGINE_TIMEOUT", HANG_TIMEOUT_S
        )
        self.load_timeout_s = load_timeout_s or _env_seconds(
            "LOGITSCOPE_LOAD_TIMEOUT", LOAD_TIMEOUT_S
        )
        self.current = None  # id of the generation in flight
        self._last_op = None
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._requests = self._events = None
        self.restarts = 0

    # -- process lifetime -------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def _ensure_started(self) -> None:
        if self.is_alive():
            return
        if self._proc is not None:
            self.restarts += 1
            self._close_pipes()
        from engine.worker import worker_main

        req_child, self._requests = self._ctx.Pipe(duplex=False)
        self._events, evt_child = self._ctx.Pipe(duplex=False)
        self._proc = self._ctx.Process(
            target=worker_main, args=(req_child, evt_child), daemon=True,
            name="logitscope-engine",
        )  # fmt: skip
        self._proc.start()
        req_child.close()
        evt_child.close()

    def _close_pipes(self) -> None:
        for conn in (self._requests, self._events):
            if conn is not None:
                conn.close()
        self._requests = self._events = None

    def close(self) -> None:
        """Stop the engine process (politely, then firmly)."""
        if self._proc is None:
            return
        with contextlib.suppress(OSError):
            self._send({"op": "shutdown", "id": 0})
        self._proc.join(timeout=3)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=3)
        self._close_pipes()
        self._proc = None

    # -- requests ---------------------------------------------------------------
    def _send(self, msg: dict) -> None:
        with self._send_lock:
            self._requests.send(msg)

    def _start(self, op: str, **payload) -> int:
        self._ensure_started()
        rid = next(self._ids)
        self._send({"op": op, "id": rid, **payload})
        return rid

    def _messages(self, rid: int) -> Iterator[dict]:
        """Messages for request `rid`; engine_died if the process dies, engine_hung
        (after killing it) if it goes silent for longer than the phase allows."""
        events, proc = self._events, self._proc
        last = time.monotonic()
        self._loading = True  # until the run's first prefill or token record
        while True:
            ready = wait([events, proc.sentinel], timeout=POLL_S)
            if events in ready or (not ready and events.poll()):
                try:
                    msg = events.recv()
                except (EOFError, OSError):
                    proc.join(timeout=2)  # the pipe closes a moment before the exit is known
                    yield _died(proc)
                    return
                last = time.monotonic()
                if msg["id"] == rid:
                    kind = msg.get("record", {}).get("type")
                    if kind in ("prefill", "token"):
                        self._loading = False
                    yield msg
                continue
            if proc.sentinel in ready and not events.poll():
                proc.join(timeout=1)
                yield _died(proc)
                return
            limit = self.load_timeout_s if self._loading else self.hang_timeout_s
            if time.monotonic() - last > limit:
                self._kill()
                yield _hung(limit)
                return

    def _kill(self) -> None:
        """SIGKILL (works on a stopped process too); the next request starts afresh."""
        if self._proc is not None:
            with contextlib.suppress(OSError, ValueError):
                self._proc.kill()
                self._proc.join(timeout=5)

    def _records(self, rid: int) -> Iterator[Record]:
        for msg in self._messages(rid):
            if isinstance(msg, ErrorRecord):
                yield msg
                return
            if "record" in msg:
                record = record_from_dict(msg["record"])
                yield record
                if record.type in ("done", "error", "inspect", "lab"):
                    return
                if record.type == "model" and self._last_op == "load":
                    return

    def generate(
        self,
        prompt: str | list[dict],
        settings: SamplingSettings,
        model: str | None = None,
        api_key: str | None = None,
        prefer: str | None = None,
    ) -> Iterator[Record]:
        """Run one generation; yields progress/model/prefill/token/done records.

        `model` is a model spec (see engine.backends.base); `api_key` is sent to
        the engine only, never recorded; `prefer` (auto | speed | memory) picks how
        a local quantized model runs on the CPU.
        """
        self._last_op = "generate"
        rid = self._start("generate", prompt=prompt, settings=settings.to_dict(), model=model,
                          api_key=api_key, prefer=prefer)  # fmt: skip
        self.current = rid
        return self._records(rid)

    def inspect(
        self,
        prompt: str | list[dict],
        settings: SamplingSettings,
        request: dict,
        model: str | None = None,
        prefer: str | None = None,
    ) -> Iterator[Record]:
        """Look inside the model at one step; yields progress/model records, then one
        inspect record (or an error). `request`: what (attention | lens), step,
        continuation (the answer's token ids), layer, head, top_k."""
        self._last_op = "inspect"
        rid = self._start("inspect", prompt=prompt, settings=settings.to_dict(), model=model,
                          request=request, prefer=prefer)  # fmt: skip
        self.current = rid
        return self._records(rid)

    def lab(self, kind: str, prompt, settings: SamplingSettings, params: dict,
            model: str | None = None) -> Iterator[Record]:  # fmt: skip
        """Run a lab experiment (quant | speculative); yields progress, then one lab record."""
        self._last_op = "lab"
        rid = self._start("lab", kind=kind, prompt=prompt, settings=settings.to_dict(),
                          params=params, model=model, prefer="speed")  # fmt: skip
        self.current = rid
        return self._records(rid)

    def load(
        self, model: str | None = None, api_key: str | None = None, prefer: str | None = None
    ) -> Iterator[Record]:
        """Load (fetching/converting if needed) a model; ends with a model record."""
        self._last_op = "load"
        return self._records(self._start("load", model=model, api_key=api_key, prefer=prefer))

    def cancel(self) -> None:
        """Ask the current generation to stop; it ends with finish_reason 'cancelled'."""
        if self.is_alive() and self.current:
            self._send({"op": "cancel", "id": 0, "target": self.current})


def _hung(seconds: float) -> ErrorRecord:
    return ErrorRecord(
        f"the engine process sent nothing for {seconds:g} s and was stopped; the partial "
        "output is kept and a fresh engine starts with the next run",
        kind="engine_hung",
    )


def _died(proc) -> ErrorRecord:
    code = proc.exitcode
    if code is None:
        how = "stopped responding"
    elif code < 0:
        how = f"was killed by signal {-code}"
    else:
        how = f"exited with code {code}"
    return ErrorRecord(
        f"the engine process {how} during this run; the partial output is kept "
        "and a fresh engine starts with the next run",
        kind="engine_died",
    )
