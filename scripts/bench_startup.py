"""How fast the app starts: from a fresh Python process to the playground window shown,
and to the default model loaded (a run possible).

    python -m scripts.bench_startup [ROUNDS] [--compare]        (default 3 rounds)

`--compare` alternates each round with a start whose engine process starts only at
the window's first load (how the app started before `app.main.start_engine`).

Each round starts a new interpreter (offscreen Qt, a throwaway data folder, the real
models folder) that runs `app/main.py`'s start (`start_engine`, `open_window`) and
reports seconds since the parent started it:

- `engine`: the engine process started (it imports MLX while the window builds);
- `shown`: the window built, shown and painted once;
- `ready`: the model loaded and the engine idle (Run would start at once).

Prints each round and the medians. A benchmark, not a test: these are wall-clock
figures of a shared machine (BENCHMARKS.md records them with the machine's load).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
T0_ENV = "LOGITSCOPE_BENCH_T0"
READY_TIMEOUT_S = 300


def child() -> int:
    """One start, as app/main.py does it; prints a JSON line of seconds since T0."""
    t0 = float(os.environ[T0_ENV])
    marks: dict[str, float] = {}
    from app.main import open_window, start_engine

    if "--late" in sys.argv:  # as before: the engine starts at the window's first load
        from engine.process.client import EngineClient

        client = EngineClient()
    else:
        client = start_engine()
    marks["engine"] = time.time() - t0
    app, window = open_window(["logitscope"], client)
    app.processEvents()
    window.repaint()  # one full paint of the window, as a first frame on screen
    marks["shown"] = time.time() - t0
    end = time.monotonic() + READY_TIMEOUT_S
    while not (window.model_record is not None and not window.bridge.busy):
        if time.monotonic() > end:
            print(json.dumps({"error": "the model did not load"}))
            return 1
        app.processEvents()
        time.sleep(0.005)
    marks["ready"] = time.time() - t0
    marks["model"] = window.model_record.name
    print(json.dumps(marks), flush=True)
    window.cleanup()
    return 0


def one_round(late: bool = False) -> dict:
    from engine.store.paths import models_dir

    env = dict(os.environ)
    env.update(
        QT_QPA_PLATFORM="offscreen",
        LOGITSCOPE_MODELS_DIR=str(models_dir()),
        LOGITSCOPE_DATA_DIR=tempfile.mkdtemp(prefix="logitscope-bench-start-"),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    env[T0_ENV] = repr(time.time())
    out = subprocess.run(
        [sys.executable, "-m", "scripts.bench_startup", "--child", *(["--late"] if late else [])],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=READY_TIMEOUT_S + 60,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not lines:
        raise SystemExit(f"a start failed:\n{out.stdout}\n{out.stderr[-2000:]}")
    return json.loads(lines[-1])


def main() -> int:
    if "--child" in sys.argv:
        return child()
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = int(args[0]) if args else 3
    modes = ("early", "late") if "--compare" in sys.argv else ("early",)
    results: dict[str, list[dict]] = {m: [] for m in modes}
    for i in range(rounds):
        for mode in modes:  # alternating: the machine's load hits both alike
            r = one_round(late=mode == "late")
            results[mode].append(r)
            print(
                f"round {i + 1} ({mode} engine): window shown {r['shown']:.2f} s · "
                f"ready to run {r['ready']:.2f} s ({r['model']})",
                flush=True,
            )
    for mode, rs in results.items():
        shown = statistics.median(r["shown"] for r in rs)
        ready = statistics.median(r["ready"] for r in rs)
        print(f"median of {rounds} ({mode} engine): shown {shown:.2f} s · ready {ready:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
