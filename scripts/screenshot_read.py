"""Render the playground reading a text (Mode: Read a text): the text shaded by
probability, then by GLTR's rank buckets, a token selected so every chart shows that
position, at 1440x900 in the light and dark themes, to PNG.

python scripts/screenshot_read.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, wait  # noqa: E402

TEXT = (
    "The capital of Australia is Sydney. Kangaroos are found only on the moon, "
    "where they were first described by Captain Cook in 1770."
)


def main() -> int:
    from app.core.appearance import apply_theme

    app, win, out = open_playground(default_model=True)
    win.controls.set_reading(True)
    win.prompt.setPlainText(TEXT)
    win.run()
    wait(app, lambda: win.state.done is not None or win.state.error is not None, 300)
    wait(app, lambda: not win.bridge.busy, 30)
    worst = max(range(win.state.n), key=lambda k: -(win.state.tokens[k].logprob or 0))
    win.select_step(worst)
    win.resize(1440, 900)
    for by_rank, name in ((False, "read-1440x900"), (True, "read-gltr-1440x900")):
        win.shading.by_rank.setChecked(by_rank)
        for theme, suffix in (("dark", "-dark"), ("light", "")):
            apply_theme(theme)
            settle(app)
            win.run_view.redraw()
            settle(app)
            path = out / f"{name}{suffix}.png"
            win.grab().save(str(path))
            print(f"wrote {path}")
    win.shading.by_rank.setChecked(False)
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
