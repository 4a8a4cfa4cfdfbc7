"""Render the playground after a real run with the default model to PNG files.

python scripts/screenshots.py [OUT_DIR]      (offscreen; no display needed)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PROMPT = "Write a haiku about the sea."


def wait(app, cond, timeout):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("timed out waiting for the app")
        app.processEvents()
        time.sleep(0.01)


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from app.window import PlaygroundWindow

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([])
    win = PlaygroundWindow()
    win.show()
    wait(app, lambda: win.model_record is not None and not win.bridge.busy, 300)
    win.prompt.setPlainText(PROMPT)
    win.controls.temp_spin.setValue(0.8)
    win.controls.seed_lock.setChecked(True)
    win.controls.seed.setValue(7)
    win.controls.max_tokens.setValue(40)
    win.run()
    wait(app, lambda: win.state.done is not None or win.state.error is not None, 300)
    wait(app, lambda: not win.bridge.busy, 30)
    win.select_step(min(4, win.state.n - 1))
    for _ in range(20):
        app.processEvents()
        time.sleep(0.02)
    win.grab().save(str(out / "playground.png"))
    print(f"wrote {out / 'playground.png'}")
    # The same run as an HTML report, and the history tab listing it.
    from engine.export import render
    from engine.journal import read_session

    session = read_session(win.journal.path)
    run = session.run(win.state.run_id)
    (out / "report.html").write_text(render("html", session, [run]), encoding="utf-8")
    print(f"wrote {out / 'report.html'}")
    win.side_tabs.setCurrentWidget(win.history)
    win.history.select_run(run.run_id)
    for _ in range(10):
        app.processEvents()
        time.sleep(0.02)
    win.grab().save(str(out / "history.png"))
    print(f"wrote {out / 'history.png'}")
    # A three-lane comparison of the same prompt at different settings.
    cmp = win.open_compare()
    cmp.set_lane_count(3)
    cmp.shared_prompt.setPlainText("Write one sentence about the moon.")
    for lane, (temp, top_p, seed) in zip(cmp.lanes, ((0.0, 1.0, 1), (1.2, 1.0, 7),
                                                     (1.0, 0.5, 3)), strict=True):  # fmt: skip
        lane.temperature.setValue(temp)
        lane.top_p.setValue(top_p)
        lane.seed.setValue(seed)
        lane.max_tokens.setValue(24)
    cmp.run_all()
    wait(app, lambda: cmp.running is None and not cmp.queue and not cmp.bridge.busy, 600)
    for _ in range(20):
        app.processEvents()
        time.sleep(0.02)
    cmp.grab().save(str(out / "compare.png"))
    print(f"wrote {out / 'compare.png'}")
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
