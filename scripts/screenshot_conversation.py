"""Render a three-turn conversation in the playground (real runs on the default
model, then the cold-vs-cached A/B of the last turn) to PNG.

python scripts/screenshot_conversation.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, shoot, wait  # noqa: E402

TURNS = ("Name a large city in Japan.", "What is it known for?", "Say that in five words.")


def main() -> int:

    app, win, out = open_playground(default_model=True)
    win.new_conversation()
    c = win.controls
    c.mode.setCurrentIndex(c.mode.findText("Chat (template)"))
    c.system.setPlainText("You are a concise travel guide.")
    c.temp_spin.setValue(0.0)
    c.max_tokens.setValue(24)
    for text in TURNS:
        win.prompt.setPlainText(text)
        win.run()
        wait(app, lambda: win.state.done is not None or win.state.error is not None, 300)
        wait(app, lambda: not win.bridge.busy, 30)
    win.flow.start_ab()
    wait(app, lambda: win.session.ab is None and not win.bridge.busy, 600)
    settle(app)
    shoot(app, win, out / "conversation.png", (1600, 1000))
    c.system.setPlainText("")  # not remembered as the user's system prompt
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
