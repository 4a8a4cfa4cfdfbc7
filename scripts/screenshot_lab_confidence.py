"""Render the lab's Confidence tab after a short real run on the default model (the
first QUESTIONS bundled questions, SAMPLES samples each), its most confident answer's
verdict disputed, at 1440x900 in the light and dark themes, and the playground showing
the second question's answer (a click on its row), to PNG.

python scripts/screenshot_lab_confidence.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, throwaway_data, wait  # noqa: E402

QUESTIONS, SAMPLES = 5, 2


def main() -> int:
    from PySide6.QtCore import Qt

    from app.core.appearance import apply_theme
    from app.lab.confidence_table import VERDICT

    throwaway_data()  # the answers are journaled: never in the person's History
    app, win, out = open_playground(default_model=True)
    lab = win.open_lab()
    view = lab.show_tab("calibrate")
    lab.resize(1440, 900)
    view.limit.setValue(QUESTIONS)
    view.samples.setValue(SAMPLES)
    done = []
    lab.bridge.lab_done.connect(done.append)
    view.run.click()
    wait(app, lambda: bool(done) and not lab.bridge.busy, 900)
    result = done[0].result
    item = view.table.item(0, VERDICT)  # the most confident answer's verdict disputed
    item.setCheckState(Qt.Unchecked if item.checkState() == Qt.Checked else Qt.Checked)
    for theme, suffix in (("light", ""), ("dark", "-dark")):
        apply_theme(theme)
        settle(app)
        path = out / f"lab-confidence{suffix}.png"
        lab.grab().save(str(path))
        print(f"wrote {path}")
    apply_theme("light")
    view.open_question(view.table.order[1])  # a question's answer, in the playground
    wait(app, lambda: win.session.guest is not None, 30)
    win.resize(1440, 900)
    settle(app)
    win.run_view.redraw()
    settle(app)
    path = out / "lab-confidence-answer.png"
    win.grab().save(str(path))
    print(f"wrote {path}")
    print(result.sentence)
    lab.close()
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
