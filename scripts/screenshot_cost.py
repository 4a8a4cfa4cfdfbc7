"""Render what a run costs after two real runs of the default model: the status line
(J/token, labelled), Compare's table with its cost rows, and the tokenizer explorer's
token economy in money.

python scripts/screenshot_cost.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import settle, throwaway_data, wait  # noqa: E402

PROMPT = "What is the capital of France?"


def _run(app, win, temperature: float, max_tokens: int):
    win.prompt.setPlainText(PROMPT)
    win.controls.temp_spin.setValue(temperature)
    win.controls.max_tokens.setValue(max_tokens)
    win.run()
    wait(app, lambda: win.state.done is not None and not win.bridge.busy, 300)
    settle(app)
    return win.state


def main() -> int:
    throwaway_data()
    from PySide6.QtWidgets import QApplication

    from app.shell.window import PlaygroundWindow

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([])
    app.setStyle("Fusion")
    win = PlaygroundWindow(load_on_start=False)
    win.resize(1440, 900)
    win.show()
    win.load_model(None)
    wait(app, lambda: win.model_record is not None and not win.bridge.busy, 300)
    first = _run(app, win, 0.0, 24)
    second = _run(app, win, 0.9, 24)
    win.run_view.refresh_status()
    settle(app)
    win.statusBar().grab().save(str(out / "cost-status-line.png"))
    compare = win.open_compare()
    compare.resize(1500, 950)
    compare.show_runs([first, second])
    settle(app)
    compare.table.grab().save(str(out / "cost-compare-table.png"))
    inside = win.open_inside()
    inside.resize(1300, 900)
    inside.tabs.setCurrentIndex(0)
    settle(app)
    inside.tokenizer.economy_in.setCurrentIndex(1)
    settle(app)
    inside.tokenizer.chart.grab().save(str(out / "cost-token-economy.png"))
    for name in ("cost-status-line", "cost-compare-table", "cost-token-economy"):
        print(f"wrote {out / name}.png")
    compare.cleanup()
    win.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
