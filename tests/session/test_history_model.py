"""History's view of the journal as a Qt-free model (app/session/history.py): every
change goes through a method and is announced; the panel draws what the model holds."""

from __future__ import annotations

from app.session.history import History
from engine.run.records import ErrorRecord
from engine.run.settings import SamplingSettings
from engine.sessions.journal import Journal, read_session


def journal_with(tmp_path, *prompts, failed=()):
    journal = Journal.create(tmp_path)
    ids = []
    for prompt in prompts:
        run_id = journal.start_run(prompt, SamplingSettings().to_dict(), None)
        if prompt in failed:
            journal.record(run_id, ErrorRecord("connection refused", kind="server"))
        ids.append(run_id)
    journal.close()
    return journal, ids


def recorder(history: History) -> list:
    heard = []
    for name in ("listed", "selected", "filter_changed"):
        getattr(history.events, name).connect(lambda *a, name=name: heard.append((name, a)))
    return heard


def test_every_change_is_announced_and_written_to_the_journal(tmp_path):
    journal, (first, second) = journal_with(tmp_path, "one", "two")
    history = History(folder=tmp_path)
    heard = recorder(history)
    history.refresh()
    assert heard == [("listed", ())] and [s.session_id for s in history.sessions] == [
        journal.session_id
    ]
    heard.clear()
    assert history.select_run(second)
    assert heard == [("selected", (journal.session_id, second))]
    assert history.selected()[1].prompt == "two"
    heard.clear()
    history.change_run(name="renamed", starred=True)
    on_disk = read_session(journal.path).run(second)
    assert on_disk.name == "renamed" and on_disk.starred
    assert ("listed", ()) in heard and history.selected()[1].name == "renamed"
    history.change_run(deleted=True)  # into the Bin; still selected there
    assert [r.run_id for _s, r in history.binned()] == [second]
    assert [r.run_id for r in history.shown_runs(history.sessions[0])] == [first]
    assert history.selection == (journal.session_id, second)
    removed, errors = history.empty_bin()
    assert (removed, errors) == (1, [])
    assert read_session(journal.path).run(second) is None
    assert history.selection == (None, None)  # the selected run is gone for good
    assert history.binned() == []


def test_selection_of_unknown_ids_selects_nothing(tmp_path):
    journal, (run,) = journal_with(tmp_path, "one")
    history = History(folder=tmp_path)
    history.refresh()
    history.select(journal.session_id)  # a whole session
    assert history.selected() == (history.sessions[0], None)
    heard = recorder(history)
    history.select("no-such-session", run)
    assert history.selection == (None, None) and heard[-1][0] == "selected"
    assert not history.select_run("no-such/1")
    assert history.change_run(name="x") is None  # nothing selected: nothing written


def test_hiding_failed_runs_is_the_models_filter(tmp_path):
    journal_with(tmp_path, "fine", "typo", failed=("typo",))
    history = History(folder=tmp_path)
    history.refresh()
    session = history.sessions[0]
    assert [r.prompt for r in history.shown_runs(session)] == ["fine", "typo"]
    heard = recorder(history)
    history.set_hide_failed(True)
    assert [name for name, _a in heard] == ["filter_changed", "listed"]
    assert [r.prompt for r in history.shown_runs(session)] == ["fine"]
    heard.clear()
    history.set_hide_failed(True)  # no change, no announcement
    assert heard == []


def test_the_panel_draws_the_models_selection(qtbot, tmp_path, monkeypatch):
    from app.history.panel import HistoryPanel
    from app.history.tree import RUN_ROLE
    from engine.sessions import journal as journal_module

    monkeypatch.setattr(journal_module, "sessions_dir", lambda: tmp_path)
    journal, (first, second) = journal_with(tmp_path, "one", "two")
    history = History(folder=tmp_path)
    panel = HistoryPanel(history)
    qtbot.addWidget(panel)
    history.select_run(second)  # the model moves: the tree follows
    assert panel.tree.currentItem().data(0, RUN_ROLE) == (journal.session_id, second)
    top = panel.tree.topLevelItem(0)
    first_row = next(
        top.child(i) for i in range(top.childCount()) if top.child(i).data(0, RUN_ROLE)[1] == first
    )
    panel.tree.setCurrentItem(first_row)  # the person clicks: the model follows
    assert history.selection == (journal.session_id, first)
    panel.cleanup()


def test_a_new_history_reads_only_the_journals_that_changed(tmp_path, monkeypatch):
    """Every window has a History: a new one reads again only what changed since any
    History of the process read it, and forgets the journals that are gone."""
    from engine.sessions import session_log

    one, _ = journal_with(tmp_path, "one")
    two, _ = journal_with(tmp_path, "two")
    read = []
    real = session_log.read_session
    monkeypatch.setattr(session_log, "read_session", lambda p: read.append(p.stem) or real(p))
    History(folder=tmp_path).refresh()
    assert sorted(read) == sorted([one.session_id, two.session_id])
    read.clear()
    History(folder=tmp_path).refresh()  # another window: nothing changed, nothing read
    assert read == []
    with open(one.path, "a", encoding="utf-8") as f:  # journal one changed: a torn line
        f.write('{"kind": "run", "run_id"\n')
    history = History(folder=tmp_path)
    history.refresh()
    assert read == [one.session_id] and history.session(one.session_id).bad_lines == 1
    two.path.unlink()
    history.refresh()
    assert [s.session_id for s in history.sessions] == [one.session_id]
    assert two.path not in history._cache and one.path in history._cache
