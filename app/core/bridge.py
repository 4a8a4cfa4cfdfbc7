"""EngineBridge: the window's only door to the engine.

A plain thread consumes `EngineClient` iterators and puts records on a queue;
a GUI-thread timer drains the queue at a steady frame rate and emits signals
with batches. So the GUI thread never waits on the engine and never redraws
per token, however fast tokens arrive.
"""

from __future__ import annotations

import queue
import threading

from PySide6.QtCore import QObject, QTimer, Signal

from app.core.preferences import compute_preference
from app.core.servers import api_key_for
from engine.inside.inspect_request import InspectRequest
from engine.process.client import EngineClient
from engine.run.continuation import with_prefix
from engine.run.records import ErrorRecord
from engine.run.settings import SamplingSettings

FRAME_MS = 33  # ~30 Hz
MAX_PER_FRAME = 256  # records handled per frame


class EngineBridge(QObject):
    """Starts loads and runs on a background thread; emits what arrives."""

    progress = Signal(str, float)
    model_loaded = Signal(object)  # ModelRecord
    prefill = Signal(object)  # PrefillRecord (latest of the frame)
    tokens = Signal(list)  # [TokenRecord, ...] arrived since the last frame
    finished = Signal(object)  # DoneRecord
    failed = Signal(object)  # ErrorRecord
    inspected = Signal(object)  # InspectRecord
    lab_done = Signal(object)  # LabRecord
    lab_step = Signal(object)  # LabStep: one step of a long experiment, as it runs
    busy_changed = Signal(bool)

    def __init__(self, client: EngineClient | None = None, owns_client: bool = True, parent=None):
        super().__init__(parent)
        self.client = client or EngineClient()
        self.owns_client = owns_client
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop_asked = False  # Stop came for the request this thread is starting
        self._timer = QTimer(self)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self._drain)
        self._timer.start()

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def load(self, model: str | None) -> bool:
        key, prefer = api_key_for(model), compute_preference()
        return self._run(lambda: self.client.load(model, api_key=key, prefer=prefer))

    def generate(
        self,
        prompt: str,
        settings: SamplingSettings,
        model: str | None,
        sink=None,
        continuation=None,
        parent_tokens=(),
    ) -> bool:
        """Start a run; `sink(record)` is called on the background thread for every
        record as it arrives (the session journal), before the window sees it. With a
        `continuation` the run branches the answer `parent_tokens` at its step: the
        parent's first tokens come first, so the run reads as a whole answer."""
        key = api_key_for(model)  # a server's key goes to the engine only, never the journal
        prefer = compute_preference()

        def start():
            records = self.client.generate(prompt, settings, model, key, prefer, continuation)
            if continuation is None:
                return records
            return with_prefix(list(parent_tokens), continuation.step, records)

        return self._run(start, sink)

    def read(self, request, model: str | None, sink=None) -> bool:
        """Read a text through the model (an engine.reading ReadRequest): token records
        (each marked read) stream like a run's, then a DoneRecord with the summary."""
        key = api_key_for(model)
        return self._run(lambda: self.client.read(request, model, key), sink)

    def inspect(
        self, prompt, settings: SamplingSettings, request: InspectRequest, model: str | None
    ) -> bool:
        """Look inside the model at one step (see engine/backends/mlx/inspect_step.py)."""
        prefer = compute_preference()
        return self._run(lambda: self.client.inspect(prompt, settings, request, model, prefer))

    def lab(self, params, prompt, settings: SamplingSettings, model) -> bool:
        """Run a lab experiment (engine.lab's parameter dataclass) in the engine."""
        return self._run(lambda: self.client.lab(params, prompt, settings, model))

    def cancel(self) -> None:
        """Stop the request in flight, even one this bridge has not sent yet: the thread
        sends it a moment after the window shows it running, and a Stop in between
        reaches it as soon as it is sent."""
        self._stop_asked = True
        self.client.cancel()

    def _run(self, start, sink=None) -> bool:
        if self.busy:
            return False
        self._stop_asked = False

        def work():
            try:
                records = start()  # sent: the client's current request from here
                if self._stop_asked:
                    self.client.cancel()
                for record in records:
                    if sink is not None and record.type != "progress":
                        sink(record)
                    self._queue.put(record)
            except Exception as e:  # the pipe broke in a way the client missed
                self._queue.put(ErrorRecord(f"lost contact with the engine: {e}", "engine_died"))
            self._queue.put(None)  # end of this request

        self._thread = threading.Thread(target=work, daemon=True, name="engine-bridge")
        self.busy_changed.emit(True)
        self._thread.start()
        return True

    def _drain(self) -> None:
        batch, last_prefill, ended = [], None, False
        for _ in range(MAX_PER_FRAME):  # the rest waits a frame: no long stall
            try:
                record = self._queue.get_nowait()
            except queue.Empty:
                break
            if record is None:
                ended = True
                continue
            kind = record.type
            if kind == "token":
                batch.append(record)
                continue
            if batch:  # keep order: tokens before what follows them
                self.tokens.emit(batch)
                batch = []
            if kind == "prefill":
                last_prefill = record
            elif kind == "progress":
                self.progress.emit(record.message, record.fraction)
            elif kind == "model":
                self.model_loaded.emit(record)
            elif kind == "done":
                self.finished.emit(record)
            elif kind == "error":
                self.failed.emit(record)
            elif kind == "inspect":
                self.inspected.emit(record)
            elif kind == "lab":
                self.lab_done.emit(record)
            elif kind == "lab_step":
                self.lab_step.emit(record)
        if last_prefill is not None:
            self.prefill.emit(last_prefill)
        if batch:
            self.tokens.emit(batch)
        if ended:
            self.busy_changed.emit(False)

    def cleanup(self) -> None:
        """The window is closing: the request in flight is cancelled (a run ends at its
        next step) and its engine closed; a model load, which no Cancel reaches, is not
        waited for (its engine, when this bridge owns it, is stopped at once)."""
        self._timer.stop()
        if self.busy:
            self.client.cancel()
            self._thread.join(timeout=0 if getattr(self.client, "loading", False) else 3)
        if self.owns_client:
            self.client.close()


_PREFIX = {"model": "Model problem", "settings": "Check the settings", "server": "Server"}


def error_text(record: ErrorRecord) -> str:
    """One line for an ErrorRecord; an engine fault's message already says
    "engine died/hung during <phase>"."""
    if record.kind in ("engine_died", "engine_hung"):
        return record.message[:1].upper() + record.message[1:]
    return f"{_PREFIX.get(record.kind, 'Error')}: {record.message}"
