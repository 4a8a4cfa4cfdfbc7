"""Render the Branches view after a real session (an answer, a branch with the model's
second choice, a token typed by the person, Sample 8), light and dark, and the
session's HTML report's branch tree (headless Chromium, when installed).

python scripts/screenshot_branches.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshot_windows import shoot  # noqa: E402
from scripts.screenshots import open_playground, settle, throwaway_data, wait  # noqa: E402

PROMPT = "Name a colour of the sky."
SIZE = (1440, 900)


def main() -> int:
    from engine.sessions.export import render
    from engine.sessions.journal import read_session

    throwaway_data()
    app, win, out = open_playground(default_model=True)
    app.setStyle("Fusion")
    win.prompt.setPlainText(PROMPT)
    c = win.controls
    c.max_tokens.setValue(12)
    c.temp_spin.setValue(0.0)
    win.run()
    wait(app, lambda: win.state.done is not None and not win.bridge.busy, 300)
    parent = win.state
    idle = lambda: not win.bridge.busy and win.session.sampling is None  # noqa: E731
    win.branch_flow.branch(3, parent.tokens[3].top[1].token_id)
    wait(app, lambda: win.state is not parent and win.state.done is not None and idle(), 300)
    win.model.show_answer(win.session.home().answers[0])
    win.branch_flow.branch(1, text=" green")
    wait(app, lambda: win.state.done is not None and idle(), 300)
    win.model.show_answer(win.session.home().answers[0])
    c.temp_spin.setValue(0.8)
    c.seed_lock.setChecked(True)
    c.seed.setValue(7)
    win.branch_flow.sample(2)
    wait(app, idle, 600)
    win.branches_view.reveal()
    win.select_step(2)
    shoot(app, win, out / f"branches-{SIZE[0]}x{SIZE[1]}.png", SIZE)
    session = read_session(win.journal.path)
    full = render("html", session)  # the report's own page, cut to its Branches section
    head, _, _ = full.partition("<body>")
    tree = full[full.index("<section class='branches'>") :]
    html = Path(tempfile.mkdtemp()) / "branches-report.html"
    html.write_text(f"{head}<body>{tree}", encoding="utf-8")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--window-size=1000,560",
                f"--screenshot={out / 'branches-report.png'}",
                html.resolve().as_uri(),
            ],
            check=False,
            capture_output=True,
            timeout=120,
        )
        print(f"wrote {out / 'branches-report.png'}")
    settle(app)
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
