"""Render the playground (a regenerated turn: two sibling runs; the settings panel
shown where a first window of that size shows it), Compare (2 and 4 lanes, every
lane's settings open), Inside and the lab at three screen sizes, after a short real
run, to PNG (offscreen; no display).
Each window fills the screen size, so the shots show what fits and what scrolls.
Every shot is taken in the light theme and the dark one (`…-dark.png`).

python scripts/screenshot_windows.py [OUT_DIR]        (default: docs/)

Sessions and settings go to a throwaway folder; the models folder is the real one.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import settle, wait  # noqa: E402

SCREENS = ((1024, 700), (1440, 900), (2560, 1440))
PROMPT = "Write a haiku about the sea."


def shoot(app, window, path: Path, screen) -> None:
    """The window filling a screen of that size (as if maximised), in the light theme
    (`path`) and the dark one (`NAME-dark.png`)."""
    from app.core.appearance import apply_theme

    window.resize(*screen)
    for theme, target in (("dark", path.with_name(f"{path.stem}-dark.png")), ("light", path)):
        apply_theme(theme)
        settle(app)
        if hasattr(window, "run_view"):
            window.run_view.redraw()
            settle(app)
        window.grab().save(str(target))
        print(f"wrote {target} ({window.width()}x{window.height()})")


def main() -> int:
    from engine.store.paths import models_dir

    os.environ["LOGITSCOPE_MODELS_DIR"] = str(models_dir())
    os.environ["LOGITSCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="logitscope-shots-")
    from PySide6.QtWidgets import QApplication

    from app.compare.window import CompareWindow
    from app.core.bridge import EngineBridge
    from app.shell.layout import COMPACT_BELOW
    from app.shell.window import PlaygroundWindow

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([])
    app.setStyle("Fusion")  # the same look on every platform, light and dark
    win = PlaygroundWindow(load_on_start=False)
    win.show()
    win.load_model(None)
    wait(app, lambda: win.model_record is not None and not win.bridge.busy, 300)
    win.prompt.setPlainText(PROMPT)
    win.controls.max_tokens.setValue(12)
    win.run()
    wait(app, lambda: win.state.done is not None and not win.bridge.busy, 300)
    first = win.state
    win.flow.regenerate()  # a second run of the turn: the turn line shows ‹ run 2/2 ›
    wait(app, lambda: win.state is not first and win.state.done is not None, 300)
    wait(app, lambda: not win.bridge.busy, 30)
    win.select_step(3)
    for screen in SCREENS:
        win.toggle_side_panel(screen[0] >= COMPACT_BELOW)  # as a first window of that size
        win.resize(*screen)
        settle(app)
        win.run_view.redraw()
        shoot(app, win, out / f"playground-{screen[0]}x{screen[1]}.png", screen)
    # Compare shares the playground's engine here: one model process at a time.
    compare = CompareWindow(
        bridge=EngineBridge(client=win.bridge.client, owns_client=False),
        journal=win.journal,
        parent=win,
    )
    compare.show()
    compare.shared_prompt.setPlainText(PROMPT)
    for lanes in (2, 4):
        compare.set_lane_count(lanes)
        for lane in compare.lanes:
            lane.max_tokens.setValue(8)
            lane.more.setChecked(True)
        compare.run_all()
        wait(
            app,
            lambda: compare.running is None and not compare.queue and not compare.bridge.busy,
            300,
        )
        for screen in SCREENS:
            shoot(app, compare, out / f"compare-{lanes}lanes-{screen[0]}x{screen[1]}.png", screen)
    compare.close()
    inside = win.open_inside()
    for screen in SCREENS:
        shoot(app, inside, out / f"inside-{screen[0]}x{screen[1]}.png", screen)
    inside.close()
    lab = win.open_lab()
    for screen in SCREENS:
        shoot(app, lab, out / f"lab-{screen[0]}x{screen[1]}.png", screen)
    lab.close()
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
