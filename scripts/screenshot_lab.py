"""Render the lab's views after real experiments on the default model to PNG.

python scripts/screenshot_lab.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.lab import BatchParams, CacheParams, QuantParams, SpeculativeParams  # noqa: E402
from scripts.screenshots import open_playground, settle, shoot, wait  # noqa: E402


def main() -> int:

    app, win, out = open_playground(default_model=True)
    win.controls.mode.setCurrentIndex(win.controls.mode.findText("Chat (template)"))
    win.prompt.setPlainText("List the planets of the solar system.")
    lab = win.open_lab()
    lab.speculative.draft_bits.setValue(4)  # the values the runs below use
    lab.speculative.ks.setText("1,2,4")
    lab.cache.turns.setValue(5)
    lab.cache.tokens.setValue(16)
    for params in (
        QuantParams((8, 4, 3), 24),
        CacheParams(turns=5, tokens=16),
        SpeculativeParams((1, 2, 4), 4, 32),
        BatchParams((1, 2, 4, 8), 16),
    ):
        kind = params.kind
        lab.tabs.setCurrentWidget(lab.views[kind])
        done = []
        lab.bridge.lab_done.connect(done.append)
        lab.start(params)
        wait(app, lambda: bool(done) and not lab.bridge.busy, 900)  # noqa: B023
        settle(app)
        shoot(app, lab, out / f"lab-{kind}.png", (1200, 760))
    lab.close()
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
