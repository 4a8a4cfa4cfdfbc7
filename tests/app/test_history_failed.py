"""History marks failed runs as failed (the reason in the tooltip), with a filter."""

from __future__ import annotations

from app.history.panel import HistoryPanel
from app.history.tree import FAILED_MARK, RUN_ROLE
from engine.run.records import ErrorRecord
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal


def test_failed_runs_are_marked_and_can_be_hidden(qtbot):
    journal = Journal.create()
    ok = journal.start_run("fine prompt", SamplingSettings().to_dict(), None)
    bad = journal.start_run("typo prompt", SamplingSettings().to_dict(), None)
    journal.record(bad, ErrorRecord("connection refused by localhost:9", kind="server"))
    journal.close()
    panel = HistoryPanel()
    qtbot.addWidget(panel)
    panel.hide_failed.setChecked(False)
    top = next(
        panel.tree.topLevelItem(i)
        for i in range(panel.tree.topLevelItemCount())
        if panel.tree.topLevelItem(i).data(0, RUN_ROLE)[0] == journal.session_id
    )
    rows = {top.child(i).text(0).split("  ", 1)[1]: top.child(i) for i in range(top.childCount())}
    failed = rows[f"{FAILED_MARK}typo prompt"]
    assert failed.text(3) == "failed" and "fine prompt" in rows
    assert "Failed: connection refused by localhost:9" in failed.toolTip(0)
    assert failed.foreground(0).color().name() == "#c0392b"
    assert ok and bad
    panel.hide_failed.setChecked(True)
    top = next(
        panel.tree.topLevelItem(i)
        for i in range(panel.tree.topLevelItemCount())
        if panel.tree.topLevelItem(i).data(0, RUN_ROLE)[0] == journal.session_id
    )
    assert [top.child(i).text(0).split("  ", 1)[1] for i in range(top.childCount())] == [
        "fine prompt"
    ]
    again = HistoryPanel()  # the filter is remembered
    qtbot.addWidget(again)
    assert again.hide_failed.isChecked()
    again.hide_failed.setChecked(False)
    panel.cleanup()
    again.cleanup()
