"""Render the lab's Distillation tab after a short real run on the default model, at
1440x900 in the light and dark themes, to PNG: the teacher against its own weights as
stored on the first paragraphs of the shipped text, and a small student distilled here
(not saved: the models folder is the real one).

python scripts/screenshot_lab_distill.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, throwaway_data, wait  # noqa: E402

COMPARE_CHARS = 1200  # the shipped text's first paragraphs: a few hundred tokens
STEPS, WIDTH, LAYERS = 40, 64, 2
SMALL = dict(train_tokens=256, heldout_tokens=64, eval_every=2, save=False)


def _run(app, lab, start) -> None:
    done = []
    lab.bridge.lab_done.connect(done.append)
    start()
    wait(app, lambda: bool(done) and not lab.bridge.busy, 900)
    lab.bridge.lab_done.disconnect(done.append)


def main() -> int:
    from app.core.appearance import apply_theme
    from app.lab.distill_compare_view import default_text

    throwaway_data()
    app, win, out = open_playground(default_model=True)
    lab = win.open_lab()
    view = lab.show_tab("distill")
    lab.resize(1440, 900)
    view.compare.text.setPlainText(default_text()[:COMPARE_CHARS])
    _run(app, lab, view.compare.run.click)
    view.compare.most.setCurrentRow(0)
    train = view.train
    train.base = replace(train.base, **SMALL)
    train.steps.setValue(STEPS)
    train.width_box.setValue(WIDTH)
    train.layers.setValue(LAYERS)
    _run(app, lab, train.start.click)
    for theme, suffix in (("dark", "-dark"), ("light", "")):
        apply_theme(theme)
        settle(app)
        path = out / f"lab-distill{suffix}.png"
        lab.grab().save(str(path))
        print(f"wrote {path}")
    print(view.train_result.sentence)
    lab.close()
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
