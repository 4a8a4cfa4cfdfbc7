"""Ctrl+E exports what History has selected when History is on screen (a whole
session), and the run on screen otherwise."""

from __future__ import annotations

import json

from app.core.bridge import EngineBridge
from app.history import panel as history_panel
from app.history.tree import RUN_ROLE
from app.shell.window import PlaygroundWindow
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal
from tests.replay import ReplayClient


def test_ctrl_e_exports_the_session_selected_in_history(qtbot, tmp_path, monkeypatch):
    journal = Journal.create()
    first = journal.start_run("first prompt", SamplingSettings().to_dict(), None)
    second = journal.start_run("second prompt", SamplingSettings().to_dict(), None)
    journal.close()
    win = PlaygroundWindow(
        bridge=EngineBridge(client=ReplayClient(None), owns_client=False), load_on_start=False
    )
    qtbot.addWidget(win)
    win.show()
    asked = []

    def ask(_parent, stem, fmt="html"):
        asked.append(stem)
        return str(tmp_path / f"{stem}.json"), "json", True

    monkeypatch.setattr(history_panel, "ask_export_path", ask)
    history = win.history
    history.refresh()
    assert history.select_run(second)
    history.export_selection()  # the History button: that run
    win.show_run(history.selected()[1])
    assert win.state.run_id == second  # the run on screen
    win.toggle_side_panel(True)
    win.side_tabs.setCurrentWidget(history)
    top = next(
        history.tree.topLevelItem(i)
        for i in range(history.tree.topLevelItemCount())
        if history.tree.topLevelItem(i).data(0, RUN_ROLE) == (journal.session_id, None)
    )
    history.tree.setCurrentItem(top)  # the session, not a run
    win.actions_["export"].trigger()  # Ctrl+E
    assert asked[-1] == f"logitscope-{journal.session_id}"
    exported = json.loads((tmp_path / f"{asked[-1]}.json").read_text(encoding="utf-8"))
    assert [r["prompt"] for r in exported["runs"]] == ["first prompt", "second prompt"]
    assert first and win.state.run_id == second  # still on screen
    win.cleanup()
