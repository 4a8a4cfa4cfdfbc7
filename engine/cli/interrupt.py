"""Ctrl-C on a command that runs the engine: the first one cancels the run the way the
window's Stop does (the engine ends it with a "cancelled" record, which is journaled and
keeps the partial answer); a second one stops waiting. The engine process itself ignores
SIGINT (engine/process/worker.py): only its client decides, so no traceback is ever printed.

    with CancelOnInterrupt(client.cancel) as ctrl_c:
        for record in client.generate(...):
            ...
    if ctrl_c.pressed:
        ...  # say "cancelled", exit 130
"""

from __future__ import annotations

import signal
import sys
import threading

INTERRUPTED_STATUS = 130  # the shell's status for a command ended by SIGINT
CANCELLED = "logitscope: cancelled (Ctrl-C); what ran is in the history"


class CancelOnInterrupt:
    """While entered, the first SIGINT calls `cancel()` (an EngineClient's, or nothing
    where the work polls `pressed`); the second raises KeyboardInterrupt (main() says
    "interrupted"). Outside the main thread it does nothing (signal handlers can only be
    set there)."""

    def __init__(self, cancel):
        self.cancel = cancel
        self.pressed = 0  # how many times Ctrl-C was pressed while entered
        self._old = None

    def _on_sigint(self, _signum, _frame) -> None:
        self.pressed += 1
        if self.pressed > 1:
            raise KeyboardInterrupt
        print("\nlogitscope: cancelling… (Ctrl-C again to stop waiting)", file=sys.stderr)
        self.cancel()

    def __enter__(self) -> CancelOnInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None

    def status(self, status: int) -> int:
        """The command's exit status: INTERRUPTED_STATUS (after saying so) when Ctrl-C
        was pressed, else `status`."""
        if not self.pressed:
            return status
        print(CANCELLED, file=sys.stderr)
        return INTERRUPTED_STATUS
