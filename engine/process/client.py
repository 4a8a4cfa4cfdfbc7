"""EngineClient: starts, talks to and supervises the engine process.

The client is plain Python (no Qt): `generate()` returns an iterator of records
and may be consumed on any thread; `cancel()` may be called from another one.
If the process dies mid-request, the iterator yields one ErrorRecord of kind
`engine_died` and ends. If it sends nothing for `hang_timeout_s` during a run
(`load_timeout_s` while a model is fetched, converted or loaded: those report
progress), it is killed and the iterator yields `engine_hung`. Both messages
start with "engine died" / "engine hung" and name the phase the request was in
(loading the model, prefill, decode, the inspection's forward pass, the
experiment). Inspections and lab experiments send a heartbeat while they
compute, so their silence limit is `hang_timeout_s` however long the pass.
Either way the records already received stand and the next request starts a
fresh process; an operation that ends without its result never looks finished.
"""

from __future__ import annotations

import contextlib
import itertools
import pickle
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import wait

from engine.inside.inspect_request import InspectRequest
from engine.process.operations import (
    Cancel,
    Generate,
    Inspect,
    Lab,
    Load,
    Operation,
    Read,
    Request,
    Shutdown,
)
from engine.process.start_method import engine_context, launch_state
from engine.process.watchdog_messages import LOADING, WORK, died, hung
from engine.reading.request import ReadRequest
from engine.run.continuation import Continuation
from engine.run.records import ErrorRecord, ProgressRecord, Record, record_from_dict
from engine.run.settings import SamplingSettings
from engine.store import environment

POLL_S = 0.05
HANG_TIMEOUT_S = 30.0  # silence allowed between records of a run
LOAD_TIMEOUT_S = 600.0  # silence allowed while a model is fetched, converted or loaded


class EngineClient:
    """One engine process, started on first use and restarted after a crash or hang.

    Args:
        hang_timeout_s: seconds of silence allowed between a run's records (None or
            0: LOGITSCOPE_ENGINE_TIMEOUT, default 30).
        load_timeout_s: the same while a model is fetched, converted or loaded (None
            or 0: LOGITSCOPE_LOAD_TIMEOUT, default 600).
    """

    def __init__(self, hang_timeout_s: float | None = None, load_timeout_s: float | None = None):
        self.hang_timeout_s = hang_timeout_s or environment.seconds(
            "LOGITSCOPE_ENGINE_TIMEOUT", HANG_TIMEOUT_S
        )
        self.load_timeout_s = load_timeout_s or environment.seconds(
            "LOGITSCOPE_LOAD_TIMEOUT", LOAD_TIMEOUT_S
        )
        self.current = None  # id of the generation in flight
        self._in_flight = False  # a request's records are being read
        self._loading = False  # ... and it is still loading its model (no work yet)
        self._last_op: type | None = None  # the class of the last operation sent
        self.phase = "starting the engine"  # what the request in flight is doing
        self._ctx = engine_context()
        self._proc = None
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._requests = self._events = None
        self.restarts = 0

    # -- process lifetime -------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The engine process's id; None before the first request and after `close()`."""
        return self._proc.pid if self._proc is not None else None

    def is_alive(self) -> bool:
        """Whether the engine process is running.

        Returns:
            True while the process started for the last request is alive; False before
            the first request, after `close()`, or once it has died or been killed.
        """
        return self._proc is not None and self._proc.is_alive()

    @property
    def loading(self) -> bool:
        """Whether the request in flight is still loading its model (fetching, converting,
        reading weights): the engine reads no Cancel or Shutdown until the load ends."""
        return self._in_flight and self._loading

    def start(self, warm: str | None = None) -> None:
        """Start the engine process now rather than at the first request.

        Args:
            warm: a backend kind ("mlx") whose libraries the process imports at once,
                so that a load sent later (the window built) finds them imported.
        """
        self._ensure_started(warm)

    def _ensure_started(self, warm: str | None = None) -> None:
        if self.is_alive():
            return
        if self._proc is not None:
            self.restarts += 1
            self._close_pipes()
        from engine.process.worker import worker_main

        req_child, self._requests = self._ctx.Pipe(duplex=False)
        self._events, evt_child = self._ctx.Pipe(duplex=False)
        self._proc = self._ctx.Process(
            target=worker_main,
            args=(req_child, evt_child, warm, launch_state()),
            daemon=True,
            name="logitscope-engine",
        )
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
            if self.current:  # a run nobody reads any more (`logitscope ... | head`)
                self._send(Request(0, Cancel(self.current)))
            self._send(Request(0, Shutdown()))
        # Replies are no longer read: an engine blocked sending one into the full pipe
        # gets a broken pipe and ends at once, rather than after the 3 s wait and a kill.
        if self._events is not None:
            self._events.close()
        # A load reads the Shutdown only once it ends (a conversion takes minutes): the
        # engine is stopped at once; what it was writing is written atomically.
        self._proc.join(timeout=0 if self.loading else 3)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=3)
        self._close_pipes()
        self._proc = None

    # -- requests ---------------------------------------------------------------
    def _send(self, request: Request) -> None:
        with self._send_lock:
            self._requests.send(request)

    def _start(self, op: Operation) -> int:
        self._ensure_started()
        rid = next(self._ids)
        self._send(Request(rid, op))
        return rid

    def _request(self, op: Operation) -> Iterator[Record]:
        """Send `op` as the current request; its records, watched."""
        self._last_op = type(op)
        rid = self.current = self._start(op)
        return self._records(rid)

    def _messages(self, rid: int) -> Iterator[dict]:
        """Messages for request `rid`; engine_died if the process dies, engine_hung
        (after killing it) if it goes silent for longer than the phase allows."""
        self._in_flight = True
        try:
            yield from self._watched(rid, self._events, self._proc)
        finally:
            self._in_flight = False

    def _watched(self, rid: int, events, proc) -> Iterator[dict]:
        last = time.monotonic()
        self._loading = True  # until the model is in memory and the work itself starts
        self.phase = LOADING
        while True:
            ready = wait([events, proc.sentinel], timeout=POLL_S)
            if events in ready or (not ready and events.poll()):
                try:
                    msg = events.recv()
                except (EOFError, OSError, pickle.UnpicklingError):  # cut off mid-message
                    proc.join(timeout=2)  # the pipe closes a moment before the exit is known
                    yield died(proc, self.phase)
                    return
                last = time.monotonic()
                if msg.get("id") == rid:
                    self._track(msg.get("record"))
                    yield msg
                continue
            if proc.sentinel in ready and not events.poll():
                proc.join(timeout=1)
                yield died(proc, self.phase)
                return
            limit = self.load_timeout_s if self._loading else self.hang_timeout_s
            if time.monotonic() - last > limit:
                self._kill()
                yield hung(limit, self.phase)
                return

    def _track(self, record) -> None:
        """Follow the request's phase (for the watchdog's deadline and its message)."""
        if record is None:
            return
        get = record.get if isinstance(record, dict) else lambda k: getattr(record, k, None)
        kind = get("type")
        work = WORK.get(self._last_op.__name__.lower(), LOADING) if self._last_op else LOADING
        if kind == "progress" and self._loading:
            self.phase = f"{LOADING} ({get('message')})"
        elif kind == "progress":
            self.phase = f"{work} ({get('message')})"
        elif kind == "model":
            self.phase = work
            # inspections and experiments send heartbeats while they compute
            self._loading = self._last_op not in (Inspect, Lab)
        elif kind in ("prefill", "token"):
            self._loading = False
            self.phase = "prefill" if kind == "prefill" else "decode"

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
            if "record" in msg:  # anything else is a heartbeat
                record = msg["record"]
                record = record_from_dict(record) if isinstance(record, dict) else record
                yield record
                if record.type in ("done", "error", "inspect", "lab"):
                    return
                if record.type == "model" and self._last_op is Load:
                    return

    def generate(
        self,
        prompt: str | list[dict],
        settings: SamplingSettings,
        model: str | None = None,
        api_key: str | None = None,
        prefer: str | None = None,
        continuation: Continuation | None = None,
    ) -> Iterator[Record]:
        """Run one generation in the engine process (started or restarted as needed).

        Args:
            prompt: the user message, or a whole conversation of {role, content} dicts.
            settings: the run's sampling settings (validated by the engine).
            model: the model spec (see engine.backends.base); None or "": the default model.
            api_key: a server's API key; sent to the engine only, never recorded.
            prefer: auto | speed | memory: how a local quantized model runs on the CPU;
                None keeps the engine's current choice (LOGITSCOPE_COMPUTE, else auto).
            continuation: a Continuation (engine/run/continuation.py): the run branches an
                answer at its step; the engine's records start at that step (see
                `continuation.with_prefix` for the whole answer). Local models only.

        Returns:
            An iterator of progress, model, prefill and token records that ends after a
            DoneRecord or an ErrorRecord (a refused request, an engine that died or hung).
        """
        return self._request(Generate(prompt, settings, model, api_key, prefer, continuation))

    def inspect(
        self,
        prompt: str | list[dict],
        settings: SamplingSettings,
        request: InspectRequest,
        model: str | None = None,
        prefer: str | None = None,
    ) -> Iterator[Record]:
        """Look inside the model at one step of a known answer.

        Args:
            prompt: the user message, or the conversation of {role, content} dicts.
            settings: the run's settings (the prompt is encoded as the run encoded it).
            request: what to see, at which step of which answer (its token ids).
            model: the model spec; None or "": the default model. It must be local.
            prefer: auto | speed | memory; None keeps the engine's current choice.

        Returns:
            An iterator of progress and model records ending with one InspectRecord or
            one ErrorRecord (a server model, a refused request, a cancel, a lost engine).
        """
        return self._request(Inspect(prompt, settings, request, model, prefer))

    def inspect_answer(
        self,
        prompt: str | list[dict],
        settings: SamplingSettings,
        request: InspectRequest,
        model: str | None = None,
        prefer: str | None = None,
    ) -> Iterator[Record]:
        """Inspect step `request.step` of the greedy answer to `prompt`.

        The answer is produced first (T = 0, step + 1 tokens) unless `request` holds
        its `continuation`; then that step is inspected. An answer that ends early
        (end of sequence) is inspected at its end, with a progress notice saying so.

        Args:
            prompt: the prompt text or chat messages.
            settings: the run's settings (temperature and max tokens are overridden).
            request: what to see and at which step (its continuation: see above).
            model: the model spec.
            prefer: auto | speed | memory.

        Yields:
            progress and model records, then one InspectRecord, or one ErrorRecord
            (an engine that died or hung while answering or inspecting, a refused
            request, a cancel) and nothing after it: a result is never reported for
            a step the answer did not reach.
        """
        step = request.step
        if step is None or request.continuation is not None:
            yield from self.inspect(prompt, settings, request, model, prefer)
            return
        # plain greedy, as documented: the sampling options (the penalty too) shape
        # only the inspected step's funnel, never which answer is inspected
        plain = SamplingSettings()
        greedy = settings.with_(
            temperature=0.0,
            top_p=plain.top_p,
            top_k=plain.top_k,
            min_p=plain.min_p,
            repetition_penalty=plain.repetition_penalty,
            max_tokens=int(step) + 1,
            seed=0,
        )
        tokens, end = [], None
        for record in self.generate(prompt, greedy, model, prefer=prefer):
            if record.type == "token":
                tokens.append(record.token_id)
            elif record.type in ("done", "error"):
                end = record
            elif record.type == "progress":
                yield record
        if end is None or end.type == "error":
            why = end.message if end is not None else "the answer ended without a final record"
            kind = end.kind if end is not None else "error"
            yield ErrorRecord(f"{why} (while producing the greedy answer to inspect)", kind)
            return
        if end.finish_reason in ("cancelled", "error"):
            kind = "settings" if end.finish_reason == "cancelled" else "error"
            why = f"the greedy answer was {end.finish_reason}: nothing to inspect"
            yield ErrorRecord(why, kind)
            return
        if len(tokens) <= int(step):
            yield ProgressRecord(
                f"the answer ended after {len(tokens)} tokens; inspecting its end", 1.0
            )
            step = len(tokens)
        yield from self.inspect(prompt, settings, request.at(step, tokens), model, prefer)

    def lab(
        self, params, prompt, settings: SamplingSettings, model: str | None = None
    ) -> Iterator[Record]:
        """Run a lab experiment in the engine process.

        Args:
            params: one of engine.lab's parameter dataclasses (validated when made).
            prompt: the prompt text or chat messages.
            settings: the prompt's settings (chat template, system prompt).
            model: the model spec (a local model: the lab needs its weights).

        Yields:
            progress and model records, then one LabRecord (its `result` is the
            experiment's result dataclass, engine/lab/results.py), or an error.
        """
        return self._request(Lab(params, prompt, settings, model))

    def read(
        self, request: ReadRequest, model: str | None = None, api_key: str | None = None
    ) -> Iterator[Record]:
        """Read a text through the model (engine/reading); cancel() stops it between chunks.

        Args:
            request: the text, its context and how to read it (validated by the engine).
            model: the model spec; None or "": the default model.
            api_key: a server's API key; sent to the engine only, never recorded.

        Returns:
            An iterator of progress, model, prefill and token records (`read` set) that
            ends after a DoneRecord whose `reading` is the summary, or an ErrorRecord.
        """
        return self._request(Read(request, model, api_key))

    def load(
        self, model: str | None = None, api_key: str | None = None, prefer: str | None = None
    ) -> Iterator[Record]:
        """Load a model (fetching or converting it first if needed) without running it.

        Args:
            model: the model spec; None or "": the default model.
            api_key: a server's API key; sent to the engine only, never recorded.
            prefer: auto | speed | memory; None keeps the engine's current choice.

        Returns:
            An iterator of progress records ending with the ModelRecord, or with an
            ErrorRecord. A load is not the current request: `cancel()` does not reach it.
        """
        self._last_op = Load
        return self._records(self._start(Load(model, api_key, prefer)))

    def cancel(self) -> None:
        """Ask the current request to stop; does nothing when no engine process runs.

        A generation ends with finish_reason "cancelled"; an inspection ends, once its
        pass is done, with an ErrorRecord of kind "settings"; a lab experiment is not
        interrupted.
        """
        if self.is_alive() and self.current:
            self._send(Request(0, Cancel(self.current)))
