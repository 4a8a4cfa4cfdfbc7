"""Render the playground on a model served by a real mlx_lm.server (started here
on the default model) to PNG: what a remote run shows and what it cannot.

python scripts/screenshot_remote.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import run_sampled, shoot, wait  # noqa: E402


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from app.shell.window import PlaygroundWindow
    from engine.backends.mlx.loader import ensure_default_model
    from tests.mlx_server import start_server

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    out.mkdir(parents=True, exist_ok=True)
    proc, url = start_server(ensure_default_model(), Path(tempfile.mkdtemp()))
    try:
        app = QApplication([])
        win = PlaygroundWindow()
        win.show()
        wait(app, lambda: win.model_record is not None and not win.bridge.busy, 300)
        win.load_model(f"{url}#")
        wait(app, lambda: win.model_record.backend == "openai" and not win.bridge.busy, 60)
        win.prompt.setPlainText("Write a haiku about the sea.")
        run_sampled(app, win, 30)
        for w, h in ((1600, 1000), (1024, 700)):
            win.toggle_side_panel(w >= 1280)
            shoot(app, win, out / f"playground-remote-{w}x{h}.png", (w, h))
        win.close()
    finally:
        proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
