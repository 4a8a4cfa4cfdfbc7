"""Render the playground and Compare, before and after a real run with the default
model, at three window sizes, to PNG files (offscreen; no display needed).

python scripts/screenshots.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PROMPT = "Write a haiku about the sea."
SIZES = ((1024, 700), (1600, 1000), (2560, 1440))


def wait(app, cond, timeout):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("timed out waiting for the app")
        app.processEvents()
        time.sleep(0.01)


def settle(app, n=25):
    for _ in range(n):
        app.processEvents()
        time.sleep(0.02)


def shoot(app, widget, path: Path, size) -> None:
    widget.resize(*size)
    settle(app)
    if hasattr(widget, "run_view"):  # the playground: every chart drawn at this size
        widget.run_view.redraw()
        settle(app)
    widget.grab().save(str(path))
    print(f"wrote {path}")


def run_sampled(app, win, max_tokens: int) -> None:
    """Run the prompt in the box at T=0.8, seed 7; select step 4 for the charts."""
    win.controls.temp_spin.setValue(0.8)
    win.controls.seed_lock.setChecked(True)
    win.controls.seed.setValue(7)
    win.controls.max_tokens.setValue(max_tokens)
    win.run()
    wait(app, lambda: win.state.done is not None or win.state.error is not None, 300)
    wait(app, lambda: not win.bridge.busy, 30)
    win.select_step(min(4, win.state.n - 1))


def open_playground(default_model: bool = False):
    """(app, window, output folder): a shown playground with its model loaded; with
    `default_model`, the default model whatever the settings remembered."""
    from PySide6.QtWidgets import QApplication

    from app.shell.window import PlaygroundWindow

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([])
    win = PlaygroundWindow()
    win.show()
    wait(
        app,
        lambda: (
            win.model_record is not None
            and not win.bridge.busy
            or win.banner.isVisible()
            and not win.bridge.busy
        ),
        300,
    )
    if default_model or win.model_record is None:  # (a remembered server may be gone)
        win.load_model(None)
        wait(
            app,
            lambda: (
                win.model_record is not None
                and not win.bridge.busy
                and win.model_record.name.startswith("SmolLM2")
            ),
            300,
        )
    return app, win, out


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from app.shell.window import PlaygroundWindow

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([])
    win = PlaygroundWindow()
    win.show()
    wait(app, lambda: win.model_record is not None and not win.bridge.busy, 300)
    win.prompt.setPlainText(PROMPT)
    win.controls.system.setPlainText("")  # the model's own default system block
    win.controls.mode.setCurrentIndex(0)
    for w, h in SIZES:
        win.toggle_side_panel(w >= 1280)
        shoot(app, win, out / f"playground-{w}x{h}-before.png", (w, h))
    run_sampled(app, win, 40)
    for w, h in SIZES:
        win.toggle_side_panel(w >= 1280)
        shoot(app, win, out / f"playground-{w}x{h}-after.png", (w, h))
    win.toggle_side_panel(True)
    shoot(app, win, out / "playground.png", (1600, 1000))
    from engine.sessions.export import render
    from engine.sessions.journal import read_session

    session = read_session(win.journal.path)
    run = session.run(win.state.run_id)
    (out / "report.html").write_text(render("html", session, [run]), encoding="utf-8")
    print(f"wrote {out / 'report.html'}")
    win.side_tabs.setCurrentWidget(win.history)
    win.history.select_run(run.run_id)
    shoot(app, win, out / "history.png", (1600, 1000))
    cmp = win.open_compare()
    cmp.set_lane_count(4)
    cmp.shared_prompt.setPlainText("Write one sentence about the moon.")
    for w, h in SIZES:
        shoot(app, cmp, out / f"compare-{w}x{h}-before.png", (w, h))
    settings = ((0.0, 1.0, 1), (1.2, 1.0, 7), (1.0, 0.5, 3), (0.7, 0.9, 5))
    for lane, (temp, top_p, seed) in zip(cmp.lanes, settings, strict=True):
        lane.temperature.setValue(temp)
        lane.top_p.setValue(top_p)
        lane.seed.setValue(seed)
        lane.max_tokens.setValue(20)
    cmp.run_all()
    wait(app, lambda: cmp.running is None and not cmp.queue and not cmp.bridge.busy, 900)
    for w, h in SIZES:
        shoot(app, cmp, out / f"compare-{w}x{h}-after.png", (w, h))
    shoot(app, cmp, out / "compare.png", (1600, 1000))
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def throwaway_data(prefix: str = "logitscope-shots-") -> None:
    """Sessions and settings in a new temporary folder; the models folder stays the real one."""
    import tempfile

    from engine.store.paths import models_dir

    os.environ["LOGITSCOPE_MODELS_DIR"] = str(models_dir())
    os.environ["LOGITSCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix=prefix)
