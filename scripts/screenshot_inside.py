"""Render the four *Inside the model* views after a real run of the default model
("The cat sat on the mat because it", raw completion) to PNG.

python scripts/screenshot_inside.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, shoot, wait  # noqa: E402


def main() -> int:
    from app.inside.window import TABS

    app, win, out = open_playground(default_model=True)
    win.controls.mode.setCurrentIndex(win.controls.mode.findText("Raw completion"))
    win.controls.temp_spin.setValue(0.0)
    win.controls.max_tokens.setValue(12)
    win.prompt.setPlainText("The cat sat on the mat because it")
    win.run()
    wait(app, lambda: win.state.done is not None or win.state.error is not None, 300)
    wait(app, lambda: not win.bridge.busy, 30)
    inside = win.open_inside(0)
    inside.attention.layer.setValue(9)

    def ready(name):
        local = name in ("hardware", "tokenizer")
        return lambda: not inside.bridge.busy and (local or inside._key() in inside.cache)

    for name in ("attention", "lens", "hardware", "tokenizer"):
        inside.tabs.setCurrentIndex(TABS.index(name))
        wait(app, ready(name), 300)
        if name == "tokenizer":
            inside.tokenizer.text.setPlainText("Tokenizers split 東京 and emoji 🦙 into bytes.")
        settle(app)
        shoot(app, inside, out / f"inside-{name}.png", (1200, 760))
    inside.close()
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
