"""Render the tour (Help ▸ Tour…) on four lessons whose view is in the playground:
each lesson's Show me run on the default model, its sentence, its view framed, at
1440x900 in the light and dark themes, to PNG (docs/tour-<lesson>[-dark].png).

python scripts/screenshot_tour.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, throwaway_data, wait  # noqa: E402

LESSONS = ("sampling", "sample_n", "read", "cost")


def main() -> int:
    from app.core.appearance import apply_theme
    from app.tour.lessons import LESSONS as ALL

    throwaway_data()
    app, win, out = open_playground(default_model=True)
    win.resize(1440, 900)
    panel = win.tour.open(0)
    keys = [x.key for x in ALL]
    ended: list = []
    panel.finished.connect(lambda *a: ended.append(a))
    for key in LESSONS:
        panel.show_lesson(keys.index(key))
        ended.clear()
        panel.show_me.click()
        wait(app, lambda: bool(ended), 600)
        for theme, suffix in (("dark", "-dark"), ("light", "")):
            apply_theme(theme)
            win.resize(1440, 900)
            settle(app)
            win.run_view.redraw()
            win.tour.host.highlight(panel.lesson.target)  # framed again for the picture
            settle(app)
            path = out / f"tour-{key.replace('_', '-')}{suffix}.png"
            win.grab().save(str(path))
            print(f"wrote {path}: {panel.sentence.text()}")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
