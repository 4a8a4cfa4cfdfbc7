"""How an engine process starts: a fresh interpreter, or on Linux a fork of one that has
already imported the heavy pure-Python libraries every engine needs.

Each engine imports transformers (mlx-lm's tokenizers are built on it): about a second
of CPU before its first token, paid again by every Inside window, Lab window, restart
after a crash and command-line run. On Linux, multiprocessing's forkserver keeps one
process per client process that has imported it (`engine.process.preload`); an engine
forked from it starts without that second. MLX is never imported there: the engine loads
its BLAS before MLX (`fast_blas`), and a GPU build must not be set up before a fork.
Elsewhere every engine is a fresh interpreter (spawn): macOS's system frameworks are not
safe to fork, and Windows cannot; so is the frozen app's, whose executable runs no `-c`.

A forked engine starts with the forkserver's environment and working folder, those of
the moment the first engine started; `launch_state()` carries the caller's current ones
and the worker applies them before anything else (`apply_launch_state`).

A command-line run starts one engine and ends: there a forkserver saves nothing (it
imports what the engine would) and costs a process of its own, about 0.9 s of CPU more
when a command fails before it needs a tokenizer. `one_engine_per_process()`, called by
the command line, starts its engine as a fresh interpreter.

LOGITSCOPE_ENGINE_START=spawn starts every engine as a fresh interpreter anywhere.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
from dataclasses import dataclass

PRELOAD = ["engine.process.preload"]


@dataclass(frozen=True)
class LaunchState:
    """The caller's environment and working folder when it started an engine."""

    environ: dict[str, str]
    cwd: str


_one_engine = False  # this process is a command-line run (one_engine_per_process)


def one_engine_per_process() -> None:
    """Say that this process starts one engine and ends: it is started as a fresh
    interpreter, with no forkserver."""
    global _one_engine
    _one_engine = True


def engine_context():
    """The multiprocessing context engines start in: forkserver on Linux (for a process
    that may start several), else spawn."""
    spawn = os.environ.get("LOGITSCOPE_ENGINE_START") == "spawn" or _one_engine
    if sys.platform != "linux" or spawn or getattr(sys, "frozen", False):
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # read when this process's forkserver starts
    return ctx


def launch_state() -> LaunchState:
    """The environment and folder an engine started now must see."""
    return LaunchState(dict(os.environ), os.getcwd())


def apply_launch_state(state: LaunchState | None) -> None:
    """Make this (forked) process's environment and folder the caller's."""
    if state is None:
        return
    if dict(os.environ) != state.environ:
        os.environ.clear()
        os.environ.update(state.environ)
    with contextlib.suppress(OSError):  # the caller's folder is gone: paths are absolute
        os.chdir(state.cwd)
