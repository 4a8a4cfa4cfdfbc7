"""Render Compare reading a shipped statement pair (true vs false) with the default
model: both lanes' texts shaded by probability, the summary table with each read's
bits per byte, and the two reads' per-word surprisal with where they disagree most,
the top row selected, to PNG.

python scripts/screenshot_compare_read.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import settle, wait  # noqa: E402

SIZE = (1500, 950)


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from app.compare.reading import load_pairs
    from app.compare.window import CompareWindow
    from engine.backends.mlx.loader import ensure_default_model

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([])
    win = CompareWindow()
    win.resize(*SIZE)
    win.show()
    win.comparison.set_model(0, str(ensure_default_model()), "SmolLM2-135M-Instruct")
    pair = next(p for p in load_pairs() if "Australia" in p.name)
    win.read_pair(pair)
    wait(app, lambda: win.comparison.busy, 10)
    wait(app, lambda: not win.comparison.busy and not win.bridge.busy, 300)
    win.read_view.most.setCurrentRow(0)
    win.read_view.most.itemClicked.emit(win.read_view.most.item(0))
    settle(app)
    path = out / "compare-read.png"
    win.grab().save(str(path))
    print(f"wrote {path}")
    win.close()
    win.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
