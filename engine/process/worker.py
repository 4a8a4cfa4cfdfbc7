"""The engine process: the only place MLX runs.

`worker_main` is the child process's entry point. Requests arrive on `requests` as
engine/process/operations.Request (an id and one operation dataclass, pickled as itself);
each operation's handler is found by its class in HANDLERS. Every reply is a
dict `{"id": request_id, "record": ...}` on `events`. A reader thread
receives requests so that a cancel reaches a generation in progress: the loop
checks the flag between prefill chunks and between tokens. While an inspection
or a lab experiment computes (one long pass, no records of its own), a heartbeat
thread sends `{"id": ..., "alive": True}` every HEARTBEAT_S so the client's
watchdog can tell a long pass from a frozen process.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
import traceback

from engine.process import operations as ops

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

HEARTBEAT_S = 0.5  # well inside the client's smallest silence limit
FAULT_ENV = "LOGITSCOPE_FAULT"  # tests: "<phase>:kill|stop[:n]" signals this process there
FAULT_PHASES = ("load", "progress", "prefill", "decode", "inspect", "lab")
MAX_MESSAGE = 1000  # characters of one error message sent to the window or the terminal


def _clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def _fault_plan() -> tuple[str, int, int] | None:
    """The fault to inject (phase, signal, n-th occurrence), from LOGITSCOPE_FAULT.

    Fault injection for the tests of the client's watchdog: the engine sends itself
    a real SIGKILL or SIGSTOP at a chosen phase (the n-th token for "decode")."""
    import signal

    from engine.store import environment

    parts = environment.text(FAULT_ENV).split(":")
    if len(parts) < 2 or parts[0] not in FAULT_PHASES or parts[1] not in ("kill", "stop"):
        return None
    sig = signal.SIGKILL if parts[1] == "kill" else signal.SIGSTOP
    n = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 1
    return parts[0], sig, n


class _Worker:
    def __init__(self, events):
        self.events = events
        self.backends: dict = {}  # kind -> Backend (each keeps its own model)
        self.cancelled: set[int] = set()
        self._send_lock = threading.Lock()  # the heartbeat thread sends too
        self._fault = _fault_plan()
        self._seen: dict[str, int] = {}

    def fault(self, phase: str) -> None:
        """Signal this process if a test asked for a fault at this phase (see FAULT_ENV)."""
        if self._fault is None or self._fault[0] != phase:
            return
        self._seen[phase] = self._seen.get(phase, 0) + 1
        if self._seen[phase] == self._fault[2]:
            os.kill(os.getpid(), self._fault[1])

    def send(self, rid: int, **msg) -> None:
        """Send one message for request `rid` to the client (thread-safe)."""
        with self._send_lock:
            self.events.send({"id": rid, **msg})

    @contextlib.contextmanager
    def heartbeat(self, rid: int):
        """Say "alive" every HEARTBEAT_S while the block computes (MLX releases the
        GIL while it evaluates, so the beat goes on during a long pass)."""
        done = threading.Event()

        def beat():
            """Send "alive" every HEARTBEAT_S until the block is done or the pipe is gone."""
            while not done.wait(HEARTBEAT_S):
                try:
                    self.send(rid, alive=True)
                except (OSError, ValueError):
                    return

        thread = threading.Thread(target=beat, daemon=True, name="heartbeat")
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def send_record(self, rid: int, record) -> None:
        """Send one record for request `rid`: the record itself, pickled by the pipe
        (the client rebuilds nothing). A LabRecord and an InspectRecord carry their
        result dataclasses of plain values (engine/lab/results.py,
        engine/inside/inside_results.py) in them."""
        self.send(rid, record=record)

    def backend(self, rid: int, op):
        """The backend for the request's model spec, with that model loaded."""
        from engine.backends.base import backend_kind, open_backend
        from engine.run.records import ProgressRecord
        from engine.run.settings import COMPUTE_PREFERENCES

        spec = op.model
        kind = backend_kind(spec)
        if kind not in self.backends:
            self.backends[kind] = open_backend(kind)
        backend = self.backends[kind]
        if kind == "mlx":  # one local model in memory at a time; servers cost nothing
            for other in self.backends.values():
                if other is not backend:
                    other.close()
        api_key = getattr(op, "api_key", None)  # Load and Generate carry one
        if api_key is not None:
            backend.api_key = api_key
        if backend.local and op.prefer in COMPUTE_PREFERENCES:
            backend.prefer = op.prefer

        def progress(message, fraction):
            """Send a progress record (a fault point for the tests)."""
            self.send_record(rid, ProgressRecord(message, fraction))
            self.fault("progress")

        self.fault("load")
        self.send_record(rid, backend.load(spec, progress))
        return backend

    def handle(self, request) -> None:
        """Run one request (an engine/process/operations.Request); a user-facing error or a bug
        becomes its ErrorRecord."""
        from engine.errors import LogitscopeError, ModelError, SettingsError
        from engine.run.records import ErrorRecord

        rid = request.id
        try:
            HANDLERS[type(request.op)](self, rid, request.op)
        except LogitscopeError as e:
            kind = "model" if isinstance(e, ModelError) else "error"
            kind = "settings" if isinstance(e, SettingsError) else kind
            message = _clip(str(e), MAX_MESSAGE)  # a message quoting a file never floods
            self.send_record(rid, ErrorRecord(message, getattr(e, "kind", None) or kind))
        except Exception as e:  # a bug: keep the process, report it plainly, in one line
            from engine.store import environment

            if environment.flag("LOGITSCOPE_DEBUG"):
                traceback.print_exc(file=sys.stderr)
            first = _clip((str(e).splitlines() or [""])[0], 300)
            self.send_record(
                rid,
                ErrorRecord(
                    f"internal error: {type(e).__name__}: {first} "
                    "(set LOGITSCOPE_DEBUG=1 for the engine's traceback)"
                ),
            )

    def load(self, rid: int, op) -> None:
        """Load the request's model; the reply is its ModelRecord."""
        self.backend(rid, op)

    def generate(self, rid: int, op) -> None:
        """Run a generation, sending each record as it comes."""
        settings = op.settings.validate()
        cont = op.continuation.validate() if op.continuation is not None else None
        backend = self.backend(rid, op)
        stop = lambda: rid in self.cancelled  # noqa: E731
        for record in backend.generate(op.prompt, settings, stop, continuation=cont):
            self.send_record(rid, record)
            if record.type in ("prefill", "token"):
                self.fault("decode" if record.type == "token" else "prefill")

    def inspect(self, rid: int, op) -> None:
        """Inspect one step with a local model (a server model is refused)."""
        from engine.errors import SettingsError

        settings = op.settings.validate()
        backend = self.backend(rid, op)
        if not backend.local:
            raise SettingsError(
                "looking inside the model needs its weights: open a local model "
                "(a server reports only the tokens it chose)"
            )
        with self.heartbeat(rid):
            self.fault("inspect")
            record = backend.inspect(op.prompt, settings, op.request)
        if rid in self.cancelled:  # asked to stop while the pass ran: nothing to show
            raise SettingsError("cancelled")
        self.send_record(rid, record)

    def lab(self, rid: int, op) -> None:
        """Run a lab experiment with a local model; the reply is its LabRecord."""
        from engine.errors import SettingsError
        from engine.lab.reporter import LabReporter
        from engine.run.records import LabRecord, ProgressRecord

        settings = op.settings.validate()
        backend = self.backend(rid, op)
        if not backend.local:
            raise SettingsError("the lab needs the model's weights: open a local model")

        def progress(message, fraction):
            """Send the experiment's progress record."""
            self.send_record(rid, ProgressRecord(message, fraction))

        # steps of a long experiment go as themselves (engine/lab/reporter.LabStep)
        stop = lambda: rid in self.cancelled  # noqa: E731
        reporter = LabReporter(progress, lambda step: self.send(rid, record=step), stop)
        with self.heartbeat(rid):
            self.fault("lab")
            result = backend.lab(op.params, op.prompt, settings, reporter)
        self.send_record(rid, LabRecord(result.kind, result))

    def read(self, rid: int, op) -> None:
        """Read a text through the model, sending each record and the read's progress."""
        from engine.run.records import ProgressRecord

        request = op.request.validate()
        backend = self.backend(rid, op)

        def progress(done: int, total: int) -> None:
            """Send the read's progress (tokens read of the text's)."""
            self.send_record(
                rid, ProgressRecord(f"read {done:,} of {total:,} tokens", done / total)
            )

        stop = lambda: rid in self.cancelled  # noqa: E731
        for record in backend.read(request, stop, progress):
            self.send_record(rid, record)
            if record.type == "token":
                self.fault("decode")


HANDLERS = {  # each operation that does work -> its handler (tests check it is complete)
    ops.Load: _Worker.load,
    ops.Generate: _Worker.generate,
    ops.Inspect: _Worker.inspect,
    ops.Lab: _Worker.lab,
    ops.Read: _Worker.read,
}


def worker_main(requests, events, warm: str | None = None, launch=None) -> None:
    """Serve requests until 'shutdown' or the client goes away.

    Args:
        requests: the pipe requests arrive on.
        events: the pipe replies go out on.
        warm: a backend kind whose libraries to import before the first request is
            served (a process started while the window builds); None: on demand.
        launch: the client's environment and folder (a start_method.LaunchState), applied
            first: a forked engine would otherwise see its forkserver's.
    """
    import signal

    from engine.backends.base import prepare_process, warm_up
    from engine.process.start_method import apply_launch_state

    apply_launch_state(launch)

    # Ctrl-C reaches the whole process group: the client decides (cancel, then close);
    # the engine never dies of it mid-record, nor prints a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    prepare_process()  # e.g. an optimised BLAS for MLX's CPU build, before MLX loads
    worker = _Worker(events)
    work: queue.Queue = queue.Queue()

    def reader():
        """Receive requests: cancels are noted at once, the rest queued in order."""
        while True:
            try:
                request = requests.recv()
            except (EOFError, OSError):
                work.put(None)
                return
            if isinstance(request.op, ops.Cancel):
                worker.cancelled.add(request.op.target)
            elif isinstance(request.op, ops.Shutdown):
                work.put(None)
                return
            else:
                work.put(request)

    threading.Thread(target=reader, daemon=True, name="requests").start()
    if warm is not None:
        with contextlib.suppress(Exception):  # the first load says what is wrong, in words
            warm_up(warm)
    while (request := work.get()) is not None:
        try:
            worker.handle(request)
        except (BrokenPipeError, EOFError, OSError):
            return  # the client is gone
        worker.cancelled.discard(request.id)
