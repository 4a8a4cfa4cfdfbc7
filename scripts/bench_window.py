"""Decode tok/s of the same run in the window and from `logitscope generate`.

    python scripts/bench_window.py [ROUNDS]

Alternates a run through the playground window (offscreen, charts drawing) and
the same run through the command line's path (EngineClient, no GUI), and prints
both medians and their ratio. Greedy, same prompt, same token count.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
PROMPT = "Write a long story about a dragon who learns to bake bread."
TOKENS = 48


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from app.shell.window import PlaygroundWindow
    from engine.process.client import EngineClient
    from engine.run.settings import SamplingSettings

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    app = QApplication([])
    win = PlaygroundWindow()
    win.show()

    def wait(cond):
        while not cond():
            app.processEvents()
            time.sleep(0.005)

    wait(lambda: win.model_record is not None and not win.bridge.busy)
    cli = EngineClient()
    settings = SamplingSettings(temperature=0.0, max_tokens=TOKENS, seed=0, prompt_cache=False)
    window_tps, cli_tps = [], []
    for _ in range(rounds):
        win.prompt.setPlainText(PROMPT)
        win.controls.temp_spin.setValue(0.0)
        win.controls.max_tokens.setValue(TOKENS)
        win.run()
        wait(lambda: win.state.done is not None and not win.bridge.busy)
        window_tps.append(win.state.done.decode_tps)
        done = [r for r in cli.generate(PROMPT, settings, win.model_record.path)][-1]
        cli_tps.append(done.decode_tps)
    cli.close()
    win.cleanup()
    w, c = statistics.median(window_tps), statistics.median(cli_tps)
    print(f"window {w:.2f} tok/s · command line {c:.2f} tok/s · ratio {w / c:.3f}")
    print(f"  window runs {[round(x, 2) for x in window_tps]}")
    print(f"  cli runs    {[round(x, 2) for x in cli_tps]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
