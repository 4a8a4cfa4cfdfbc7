"""Compare's reading lanes, the window's side: a lane's read request, the start of a
lane's run (a read or a generation), and the statement pairs shipped with the app
(resources/read_pairs.json) behind "Read a pair…".

The pairs file sits in `resources/` beside the `app` package: installed there by
pyproject.toml's package-data (`app = ["../resources/*"]`) and put there in the frozen
app by packaging/logitscope.spec (`datas` adds resources/), as the window icon is."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import QMenu, QToolButton

from engine.reading.request import ReadRequest

PAIRS_FILE = Path(__file__).resolve().parent.parent.parent / "resources" / "read_pairs.json"


@dataclass(frozen=True)
class Pair:
    """Two statements to read with one model (lane A reads `a`, lane B reads `b`)."""

    kind: str  # "true vs false", "common vs rare wording", …
    name: str
    a: str
    b: str


def load_pairs(path: Path = PAIRS_FILE) -> list[Pair]:
    """The shipped pairs; [] when the file is missing or malformed (the menu says so)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [
            Pair(str(p["kind"]), str(p["name"]), str(p["a"]), str(p["b"]))
            for p in data["pairs"]
            if str(p["a"]).strip() and str(p["b"]).strip()
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def read_request(lane) -> ReadRequest:
    """The engine's request for a reading lane's run (a Lane): its text, and its
    system box as the context read before it (not scored)."""
    state = lane.state
    return ReadRequest(text=state.prompt, context=state.settings.system_prompt or None)


def start_lane_run(bridge, lane, sink) -> bool:
    """Start lane `lane`'s run on `bridge`: a read when it reads, else a generation.
    False when the bridge is still busy (retry)."""
    state = lane.state
    if state.reading:
        return bridge.read(read_request(lane), lane.model_path, sink=sink)
    return bridge.generate(state.prompt, state.settings, lane.model_path, sink=sink)


def pair_button(parent, on_pick) -> QToolButton:
    """The "Read a pair…" button: a menu of the shipped pairs by kind; picking one calls
    `on_pick(pair)`. Disabled, with the reason, when the file cannot be read."""
    button = QToolButton(parent)
    button.setText("Read a pair…")
    button.setPopupMode(QToolButton.InstantPopup)
    pairs = load_pairs()
    if not pairs:
        button.setEnabled(False)
        button.setToolTip(f"The statement pairs could not be read from {PAIRS_FILE}")
        return button
    button.setToolTip(
        "Two lanes read a pair of statements with lane A's model: true vs false, "
        "common vs rare wording, English vs another language"
    )
    menu = QMenu(button)
    kind = None
    for pair in pairs:
        if pair.kind != kind:
            kind = pair.kind
            menu.addSection(kind)
        action = menu.addAction(pair.name)
        action.setToolTip(f"A: {pair.a}\nB: {pair.b}")
        action.triggered.connect(lambda _on=False, p=pair: on_pick(p))
    menu.setToolTipsVisible(True)
    button.setMenu(menu)
    return button
