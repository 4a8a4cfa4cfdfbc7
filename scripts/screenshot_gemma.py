"""Render the playground on the second real model, Gemma 3 270M (its Q4_K_M GGUF
from PyPI, converted), after a greedy raw-completion run, to PNG.

python scripts/screenshot_gemma.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, shoot, wait  # noqa: E402


def main() -> int:
    from engine.backends.mlx.loader import resolve_model
    from engine.models.pypi_models import gemma_gguf

    folder = resolve_model(str(gemma_gguf()))
    app, win, out = open_playground()
    win.load_model(str(folder))
    wait(app, lambda: "gemma" in win.model_record.architecture and not win.bridge.busy, 300)
    win.controls.mode.setCurrentIndex(win.controls.mode.findText("Raw completion"))
    win.controls.temp_spin.setValue(0.0)
    win.controls.max_tokens.setValue(24)
    win.prompt.setPlainText("What is the capital of France?")
    win.run()
    wait(app, lambda: win.state.done is not None or win.state.error is not None, 300)
    wait(app, lambda: not win.bridge.busy, 30)
    win.select_step(min(7, win.state.n - 1))
    shoot(app, win, out / "playground-gemma.png", (1600, 1000))
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
