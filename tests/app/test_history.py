"""Every run is journaled; opening one from history restores it without the model."""

from __future__ import annotations

import json

import numpy as np
from PySide6.QtCore import Qt

from app.core.bridge import EngineBridge
from app.shell.window import PlaygroundWindow
from engine.sessions.journal import read_session
from tests.app.conftest import run_and_wait


def chart_snapshot(win) -> dict:
    x, y = win.timeline_chart.prob_curve.getData()
    return {
        "text": win.output.plain_text(),
        "dist_ids": list(win.dist_chart.token_ids),
        "dist_raw": win.dist_chart.raw_probs.tolist(),
        "dist_sampled": win.dist_chart.sampled_probs.tolist(),
        "temp": win.temp_chart.marker_probs.tolist(),
        "timeline": (x.tolist(), y.tolist()),
        "entropy": win.timeline_chart.entropy_curve.getData()[1].tolist(),
        "throughput": win.throughput_chart.tps.tolist(),
        "context": dict(win.context_chart.counts),
    }


def test_runs_are_journaled_and_reopen_exactly(qtbot, window, engine_client):
    state = run_and_wait(qtbot, window, "Name two rivers.", temperature=0.9, max_tokens=10)
    window.select_step(3)
    live = chart_snapshot(window)
    session = read_session(window.journal.path)
    run = session.run(state.run_id)
    assert run.tokens == state.tokens and run.done == state.done
    assert run.model["name"] == "SmolLM2-135M-Instruct"

    # A second window with no model at all shows the run again from the journal.
    viewer = PlaygroundWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False), load_on_start=False
    )
    qtbot.addWidget(viewer)
    viewer.show()
    assert viewer.model_record is None
    viewer.side_tabs.setCurrentWidget(viewer.history)
    assert viewer.history.select_run(state.run_id)
    qtbot.mouseClick(viewer.history.buttons["open"], Qt.LeftButton)
    viewer.controls.temp_spin.setValue(window.controls.temp_spin.value())
    viewer.select_step(3)
    again = chart_snapshot(viewer)
    assert again.pop("text") == live.pop("text")
    assert again.pop("context") == live.pop("context")
    for key in live:
        np.testing.assert_allclose(
            np.array(again[key], dtype=float), np.array(live[key], dtype=float), err_msg=key
        )
    assert "from History" in viewer.viewing_label.text() and viewer.session.guest is not None
    viewer.cleanup()


def test_rename_star_delete_and_export(qtbot, replay_window, tmp_path):
    state = run_and_wait(qtbot, replay_window, "Say hi.", max_tokens=4)
    history = replay_window.history
    # The panel follows the journal (its events coalesced over 100 ms), not the run's end.
    qtbot.waitUntil(lambda: history.select_run(state.run_id), timeout=5_000)
    history.rename("greeting test")
    qtbot.mouseClick(history.buttons["star"], Qt.LeftButton)
    run = read_session(replay_window.journal.path).run(state.run_id)
    assert run.name == "greeting test" and run.starred
    assert history.tree.currentItem().text(0).endswith("★ greeting test")
    out = tmp_path / "run.json"
    history.export_to(str(out), "json")
    doc = json.loads(out.read_text())
    assert [r["run_id"] for r in doc["runs"]] == [state.run_id]
    assert doc["runs"][0]["name"] == "greeting test"
    asked = []
    history.confirm = lambda title, text: asked.append(text) or False  # the user cancels
    qtbot.mouseClick(history.buttons["delete"], Qt.LeftButton)
    assert asked and history.select_run(state.run_id)  # asked, and nothing happened
    history.confirm = lambda title, text: True
    qtbot.mouseClick(history.buttons["delete"], Qt.LeftButton)
    assert not history.select_run(state.run_id)
    assert read_session(replay_window.journal.path).run(state.run_id).deleted
    # The run waits in the Bin, whole, until restored or the bin is emptied.
    assert history.select_run(state.run_id, in_bin=True)
    qtbot.mouseClick(history.buttons["restore"], Qt.LeftButton)
    assert history.select_run(state.run_id)
    assert read_session(replay_window.journal.path).run(state.run_id).tokens == state.tokens
    qtbot.mouseClick(history.buttons["delete"], Qt.LeftButton)
    qtbot.mouseClick(history.buttons["empty"], Qt.LeftButton)
    assert read_session(replay_window.journal.path).run(state.run_id) is None
    # The live session keeps journaling into the rewritten file.
    again = run_and_wait(qtbot, replay_window, "Say bye.", max_tokens=3)
    assert read_session(replay_window.journal.path).run(again.run_id).tokens == again.tokens


def test_importing_one_run_of_a_live_session_loses_nothing(qtbot, replay_window, tmp_path):
    """Seen: export one run of a 2-run session, import it: the journal became 1 run and
    later runs of the session were written to a file that no longer existed."""
    first = run_and_wait(qtbot, replay_window, "Say hi.", max_tokens=3)
    second = run_and_wait(qtbot, replay_window, "Say bye.", max_tokens=3)
    history = replay_window.history
    history.refresh()
    assert history.select_run(first.run_id)
    out = tmp_path / "one-run.json"
    assert history.export_to(str(out), "json")
    before = read_session(replay_window.journal.path)
    imported = history.import_from(str(out))
    after = read_session(replay_window.journal.path)
    assert imported.session_id == before.session_id
    assert [r.run_id for r in after.runs] == [r.run_id for r in before.runs]
    assert after.run(second.run_id).tokens == second.tokens
    third = run_and_wait(qtbot, replay_window, "Say yes.", max_tokens=3)
    journal = read_session(replay_window.journal.path)
    assert journal.run(third.run_id).tokens == third.tokens
    assert len({third.run_id, first.run_id, second.run_id}) == 3
    qtbot.waitUntil(lambda: history.select_run(third.run_id), timeout=5_000)  # shown


def test_import_puts_an_exported_session_back_in_history(qtbot, replay_window, tmp_path):
    from engine.sessions.export import to_json

    state = run_and_wait(qtbot, replay_window, "Say hi.", max_tokens=3)
    session = read_session(replay_window.journal.path)
    doc = json.loads(to_json(session))
    doc["session"]["session_id"] = "imported-test"
    for run in doc["runs"]:
        run["run_id"] = run["run_id"].replace(session.session_id, "imported-test")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    imported = replay_window.history.import_from(str(path))
    assert imported.session_id == "imported-test"
    new_id = state.run_id.replace(session.session_id, "imported-test")
    assert replay_window.history.select_run(new_id)
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with qtbot.waitSignal(replay_window.history.message, timeout=2000) as sig:
        assert replay_window.history.import_from(str(bad)) is None
    assert "not a Logitscope session export" in sig.args[0]


def test_export_dialog_adds_the_extension_before_asking_to_replace(qtbot, tmp_path, monkeypatch):
    """Seen: a name typed without its extension replaced an existing .json silently."""
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    from app.dialogs import file_dialogs

    existing = tmp_path / "mine.json"
    existing.write_text("precious")
    monkeypatch.setattr(QFileDialog, "exec", lambda self: True)
    monkeypatch.setattr(QFileDialog, "selectedFiles", lambda self: [str(tmp_path / "mine")])
    monkeypatch.setattr(
        QFileDialog, "selectedNameFilter", lambda self: file_dialogs.FILTERS["json"]
    )
    asked = []

    def answer(*args, **kw):
        asked.append(args[2])
        return QMessageBox.Cancel

    monkeypatch.setattr(QMessageBox, "question", answer)
    assert file_dialogs.ask_export_path(None, "run") is None  # the user said no
    assert asked and "mine.json" in asked[0] and existing.read_text() == "precious"
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.Yes)
    assert file_dialogs.ask_export_path(None, "run") == (str(existing), "json", True)
    # A new name is not asked about, and the folder is remembered for next time.
    monkeypatch.setattr(QFileDialog, "selectedFiles", lambda self: [str(tmp_path / "new")])
    asked.clear()
    monkeypatch.setattr(QMessageBox, "question", answer)
    assert file_dialogs.ask_export_path(None, "run")[0] == str(tmp_path / "new.json")
    assert not asked and file_dialogs.default_folder() == str(tmp_path)
