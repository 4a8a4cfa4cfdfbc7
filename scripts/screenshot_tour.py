"""Render the tour (Help ▸ Tour…) on every lesson: each lesson's Show me run on the
default model, its sentence, its view framed, at 1440x900 in the light and dark themes,
to PNG (docs/tour-<lesson>[-dark].png). A lesson whose view is in another window
(Inside, the Lab) is drawn as that window beside the tour's panel.

python scripts/screenshot_tour.py [OUT_DIR] [LESSON ...]     (default: docs/, every lesson)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, throwaway_data, wait  # noqa: E402

SIZE = (1440, 900)


def picture(win, panel, target):
    """The playground (its own tour panel docked), or the target's window beside a
    copy of the panel, as one 1440x900 image."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QPainter, QPixmap

    top = target.window()
    if top is win:
        return win.grab()
    side = panel.grab()
    top.resize(SIZE[0] - side.width(), SIZE[1])
    shot = QPixmap(*SIZE)
    shot.fill(win.palette().window().color())
    painter = QPainter(shot)
    painter.drawPixmap(QPoint(0, 0), top.grab())
    painter.drawPixmap(QPoint(SIZE[0] - side.width(), 0), side)
    painter.end()
    return shot


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
    for key in sys.argv[2:] or keys:
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
            target = win.tour.host.target_widget(panel.lesson.target)
            settle(app)
            picture(win, panel, target).save(str(path))
            print(f"wrote {path}: {panel.sentence.text()}")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
