"""History follows the journal's own change events (whoever writes, on whatever
thread), names its sessions readably and keeps the Run column wide enough to read."""

from __future__ import annotations

import re
import threading

import pytest

from app.history.panel import HistoryPanel
from app.history.tree import MODEL_SHARE, RUN_MIN
from engine.run.records import ErrorRecord, ModelRecord, to_dict
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal

LONG_NAME = "mlx-community/Some-Very-Long-Model-Name-Instruct-4bit-DWQ-2507"
LONG_MODEL = to_dict(
    ModelRecord(LONG_NAME, f"/models/{LONG_NAME}", "llama", "4-bit", 10**8, 2048, "cpu", 0.1)
)


@pytest.fixture
def panel(qtbot):
    p = HistoryPanel()
    qtbot.addWidget(p)
    p.resize(360, 520)
    p.show()
    yield p
    p.cleanup()


def write_run(journal: Journal, prompt: str, model=None) -> str:
    run_id = journal.start_run(prompt, SamplingSettings().to_dict(), model)
    journal.record(run_id, ErrorRecord("stopped by the test", "error"))
    return run_id


def test_a_run_written_on_another_thread_is_listed_without_a_refresh(qtbot, panel):
    journal = Journal.create()
    done: list[str] = []
    writer = threading.Thread(target=lambda: done.append(write_run(journal, "Name a river.")))
    writer.start()
    writer.join()
    qtbot.waitUntil(lambda: panel.select_run(done[0]), timeout=5_000)
    assert "Name a river." in panel.tree.currentItem().text(0)
    # A change by another writer (here: a star) shows too, and the selection stays.
    other = Journal.open(journal.path)
    other.meta(done[0], starred=True)
    qtbot.waitUntil(lambda: "★" in panel.tree.currentItem().text(0), timeout=5_000)
    assert panel.tree.currentItem().data(0, 0x0101)[1] == done[0]
    journal.close()
    other.close()


def test_sessions_have_distinct_names_and_the_run_column_keeps_its_room(qtbot, panel):
    first, second = Journal.create(), Journal.create()
    write_run(first, "What is the capital of France?", LONG_MODEL)
    write_run(second, "Write a haiku about   the sea.\nPlease.", LONG_MODEL)
    qtbot.waitUntil(lambda: panel.tree.topLevelItemCount() >= 2, timeout=5_000)
    panel.refresh()
    row = panel.tree.topLevelItem(0).child(0)
    assert row.text(1) == LONG_NAME.split("/")[1]  # the picker's name, elided on screen
    assert LONG_NAME in row.toolTip(1)
    names = [panel.tree.topLevelItem(i).text(0) for i in range(panel.tree.topLevelItemCount())]
    assert len(set(names)) == len(names)
    assert any(n.endswith(" · Write a haiku about the sea. Please.") for n in names)
    assert any(n.endswith(" · What is the capital of France?") for n in names)
    assert all(re.match(r"(\w+ · )?(\d{1,2} \w{3}( \d{4})? )?\d\d:\d\d · ", n) for n in names)
    header = panel.tree.header()
    for _round in range(2):  # after a refresh and after an expand
        for i in range(panel.tree.topLevelItemCount()):
            panel.tree.topLevelItem(i).setExpanded(True)
        qtbot.waitUntil(lambda: header.sectionSize(0) >= RUN_MIN, timeout=2_000)
        width = panel.tree.viewport().width()
        assert header.sectionSize(1) <= width * MODEL_SHARE + 1
        assert sum(header.sectionSize(c) for c in range(4)) <= width
        panel.refresh()
    first.close()
    second.close()


def test_compare_lanes_appear_in_history_as_they_end(qtbot, panel, engine_client):
    from app.compare.window import CompareWindow
    from app.core.bridge import EngineBridge

    journal = Journal.create()
    win = CompareWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False), journal=journal
    )
    qtbot.addWidget(win)
    win.comparison.set_shared_prompt("Hi", same=True)
    for lane in win.lanes:
        lane.max_tokens.setValue(2)
    win.run_all()
    qtbot.waitUntil(lambda: not win.comparison.busy and not win.bridge.busy, timeout=180_000)
    ids = [lane.state.run_id for lane in win.comparison.lanes]
    qtbot.waitUntil(lambda: all(panel.select_run(i) for i in ids), timeout=5_000)
    rows = []
    for i in ids:
        panel.select_run(i)
        rows.append(panel.tree.currentItem().text(0))
    assert ["[lane A]" in rows[0], "[lane B]" in rows[1]] == [True, True]
    win.cleanup()
    journal.close()
