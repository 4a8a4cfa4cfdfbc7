"""Render Inside the model's Journey tab and Attention-by-position tab after a real
sampled run on a prompt of a few hundred tokens, light and dark.

python scripts/screenshot_journey.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshot_windows import shoot  # noqa: E402
from scripts.screenshots import open_playground, throwaway_data, wait  # noqa: E402

SIZE = (1440, 900)
STEP = 3
PROMPT = (
    "Read the notes from the harbour office, then answer the question at the end.\n"
    "Monday: the ferry to the island left at seven, half full; the wind came from the "
    "west and the crossing took forty minutes. The café on the pier opened late because "
    "the baker's van broke down near the bridge. Tuesday: fog until noon, no fishing "
    "boats went out, and the harbour master repainted the red buoy by the breakwater. "
    "A yacht from Norway moored at berth twelve for two nights; its crew asked about "
    "fresh water and the weather for the weekend. Wednesday: the new crane arrived on a "
    "barge and was tested with empty containers; one of the old mooring ropes snapped "
    "and was replaced. The school brought thirty children to see the lifeboat, and the "
    "coxswain showed them the radio room and the engines. Thursday: strong wind from "
    "the north, the ferry ran only twice, and a delivery of diesel was postponed to "
    "Friday morning. The lighthouse keeper reported that the lamp's second bulb had "
    "failed and ordered a spare. Friday: calm sea, the diesel arrived at six, the "
    "market stalls filled the quay by nine, and the Norwegian yacht left at noon for "
    "the north. In the evening a small concert was held in the old net shed, and the "
    "mayor thanked the volunteers who cleaned the beach after the storm.\n"
    "Question: on which day did the new crane arrive?"
)


def main() -> int:
    """Run the prompt, open Inside the model at STEP and shoot both tabs; exit status."""
    from app.inside.window import TABS

    throwaway_data()
    app, win, out = open_playground(default_model=True)
    app.setStyle("Fusion")
    win.prompt.setPlainText(PROMPT)
    c = win.controls
    c.max_tokens.setValue(12)
    c.temp_spin.setValue(0.7)
    c.top_p.setValue(0.9)
    c.top_k.setValue(40)
    c.min_p.setValue(0.02)
    c.rep.setValue(1.1)
    c.seed_lock.setChecked(True)
    c.seed.setValue(4)
    win.run()
    wait(app, lambda: win.state.done is not None and not win.bridge.busy, 300)
    win.select_step(STEP)
    inside = win.open_inside(STEP)
    for name, file in (("journey", "journey"), ("position", "position")):
        inside.tabs.setCurrentIndex(TABS.index(name))
        wait(app, lambda: not inside.bridge.busy and inside._key() in inside.cache, 300)
        shoot(app, inside, out / f"{file}-{SIZE[0]}x{SIZE[1]}.png", SIZE)
    bins = inside.cache[inside._key()].data["bins"]
    print("attention by position (mean of layers):", {k: round(v, 4) for k, v in bins.items()})
    inside.close()
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
