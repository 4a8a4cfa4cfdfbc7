"""The Lab's Confidence tab on the real default model: the question set answered in the
engine, drawn from the engine's result (the diagram's bars are its bins, the table its
rows sorted by the chosen signal), a disputed verdict recomputed as with_overrides
computes it, and a question's row opening its journaled answer in the playground, its
samples with it as branches."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt

from app.lab.confidence_table import CONFIDENCE, QUESTION, VERDICT
from app.lab.confidence_view import accuracy_text
from engine.lab.confidence import with_overrides

N = 2  # questions: the table's order, a flipped verdict and a row's click
CANCELLED_OF = 5  # the cancelled run's questions: room to stop before the last


def test_the_confidence_tab(qtbot, window):
    lab = window.open_lab()
    qtbot.addWidget(lab)
    view = lab.show_tab("calibrate")
    assert lab.current_kind() == "calibrate"
    name = window.model_record.name  # the tab runs its question set, not the prompt
    assert lab.status.text() == f"Experiments run on {name}; this one with its question set."
    view.limit.setValue(N)
    view.samples.setValue(2)
    done, said = [], []
    lab.bridge.lab_done.connect(done.append)
    lab.bridge.progress.connect(lambda m, _f: said.append(m))
    view.run.click()
    qtbot.waitUntil(lambda: view.cancel_button.isEnabled(), timeout=10_000)
    qtbot.waitUntil(lambda: bool(done) and not lab.bridge.busy, timeout=300_000)
    r = done[0].result
    assert view.result is r and not view.cancel_button.isEnabled()
    assert r.answered == r.asked == len(r.rows) == N and r.samples == 2 and not r.cancelled
    assert all(len(row.samples) == 2 for row in r.rows)
    # progress per question, with the time left from the second on
    questions = [m for m in said if m.startswith("Question")]
    assert questions[0] == f"Question 1 of {N}"
    assert all(re.fullmatch(rf"Question \d of {N}, about \d+ s left", m) for m in questions[1:])
    assert len(questions) == N

    # the reliability diagram: a bar per bin holding questions, at the bin's accuracy
    key = view.chosen()
    assert key == r.signals[0].key
    summary = next(s for s in r.signals if s.key == key)
    bins = [b for b in summary.bins if b.count]
    bars = view.reliability.bars.opts
    assert list(bars["height"]) == [b.accuracy for b in bins] and bins
    assert list(bars["x"]) == pytest.approx([(b.low + b.high) / 2 for b in bins])
    assert [t.toPlainText() for t in view.reliability.counts] == [str(b.count) for b in bins]
    assert sum(b.count for b in bins) == N
    # every signal's AUROC side by side, with the intervals the result has
    assert view.auroc.drawn == [(s.key, s.auroc) for s in r.signals]
    assert list(view.auroc.bars.opts["width"]) == [s.auroc or 0.0 for s in r.signals]
    assert view.auroc.intervals == [
        (s.key, s.auroc_low, s.auroc_high) for s in r.signals if s.auroc_low is not None
    ]
    curves = view.coverage.curves
    for s in r.signals:
        if s.coverage:
            xs, ys = curves[s.key].getData()
            assert list(xs) == list(s.coverage) and list(ys) == list(s.accuracy)

    # the table: the rows, the most confident first by the chosen signal
    def rank(row):
        value = row.signal(key)
        return (value is None, -(value or 0.0), row.line)

    want = sorted(r.rows, key=rank)
    table = view.table
    assert table.rowCount() == N
    assert [table.item(i, QUESTION).text() for i in range(N)] == [w.question for w in want]
    assert [table.item(i, CONFIDENCE).text() for i in range(N)] == [
        f"{w.signal(key):.3f}" if w.signal(key) is not None else "—" for w in want
    ]
    for i, w in enumerate(want):
        verdict = table.item(i, VERDICT)
        assert verdict.text().startswith("✓ right" if w.correct else "✗ wrong")
        assert verdict.checkState() == (Qt.Checked if w.correct else Qt.Unchecked)
    assert accuracy_text(r) in view.summary.text()

    # a disputed verdict: the figures are with_overrides', the row says so
    top = table.order[0]
    flipped = not r.rows[top].correct
    expected = with_overrides(r, {top: flipped})
    assert expected.accuracy != r.accuracy
    table.item(0, VERDICT).setCheckState(Qt.Checked if flipped else Qt.Unchecked)
    qtbot.waitUntil(lambda: view.result is not r, timeout=5_000)
    assert view.result == expected and view.result.overrides == (top,)
    assert accuracy_text(expected) in view.summary.text()
    assert f"Accuracy {expected.accuracy:.0%}" in view.summary.text()
    assert table.item(0, VERDICT).text().endswith("· overridden")
    assert view.auroc.drawn == [(s.key, s.auroc) for s in expected.signals]

    # a click on a question opens its greedy answer in the playground, read-only
    assert len(view.run_ids) == N and all(view.run_ids)
    row = 1
    index = table.order[row]
    answer = r.rows[index]
    cell = table.visualRect(table.model().index(row, QUESTION)).center()
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=cell)
    session = window.session
    qtbot.waitUntil(lambda: session.guest is not None, timeout=5_000)
    assert session.guest.run.run_id == view.run_ids[index]
    shown = session.shown
    assert tuple(t.token_id for t in shown.tokens if not t.eos) == answer.answer_ids
    assert [t.logprob for t in shown.tokens if not t.eos] == pytest.approx(
        list(answer.token_logprobs[: len(answer.answer_ids)]), abs=1e-4
    )
    assert shown.prompt == answer.question and shown.done is not None
    # its samples come with it: sibling runs of the turn, branches at step 0, their own ids
    answers = session.home().answers
    assert len(answers) == 1 + len(answer.sample_ids) == 3
    assert answers[session.home().current].state is shown
    ids = [tuple(t.token_id for t in a.state.tokens if not t.eos) for a in answers]
    assert ids == [answer.answer_ids, *answer.sample_ids]
    kids = [a for a in answers if a.state is not shown]
    assert all(a.parent.state is shown and a.branch_step == 0 for a in kids)
    assert all(a.branch_kind == "sample" and a.state.settings.temperature == 1.0 for a in kids)
    tree = window.branches_view  # the greedy answer, its one branch point, the two samples
    tree.refresh()
    (root,) = [tree.tree.topLevelItem(i) for i in range(tree.tree.topLevelItemCount())]
    assert root.data(0, Qt.UserRole).state is shown and root.childCount() == 1
    point = root.child(0)
    assert point.text(0) == "at step 0, from the start" and point.childCount() == 2
    assert [point.child(i).data(0, Qt.UserRole) for i in range(2)] == kids
    tree._clicked(point.child(1))  # a sample shown: every chart follows its tokens
    assert session.shown is kids[1].state
    window.run_view.redraw()
    assert session.guest is not None  # still the run from elsewhere, read-only
    tree._clicked(tree.items[answers[0]])  # the tree was redrawn: its item for the greedy one
    assert session.shown is shown
    window.run_view.redraw()  # its charts: the distributions drawn, no invented speed
    throughput = window.charts.throughput
    assert throughput.empty.isVisible() and not len(throughput.times)
    assert "not measured" in throughput.getPlotItem().titleLabel.text

    # Cancel: the engine stops after the question it is answering; the rest is drawn
    done.clear()
    view.limit.setValue(CANCELLED_OF)
    view.samples.setValue(0)
    view.run.click()
    qtbot.waitUntil(lambda: view.tally[0] >= 1, timeout=120_000)
    view.cancel_button.click()
    qtbot.waitUntil(lambda: bool(done) and not lab.bridge.busy, timeout=120_000)
    c = done[0].result
    assert c.cancelled and 1 <= c.answered < c.asked == CANCELLED_OF and c.samples == 0
    assert view.result is c and table.rowCount() == c.answered == len(view.run_ids)
    assert "Cancelled" in view.summary.text() and not view.cancel_button.isEnabled()
    lab.close()


def test_a_run_whose_model_claims_no_timings_draws_no_speed(qtbot):
    """A journaled Lab answer's times are its teacher-forced pass's, not its decoding's:
    the throughput chart says so; the same run with timings draws its curve."""
    from dataclasses import replace

    from app.charts.throughput import UNTIMED, ThroughputChart
    from tests.app.test_views_follow_the_session import finished_run

    chart = ThroughputChart()
    qtbot.addWidget(chart)
    timed = finished_run()
    chart.update_from(timed)
    assert len(chart.times) == timed.n == 8 and not chart.empty.isVisible()
    untimed = finished_run()
    caps = tuple(c for c in untimed.model.capabilities if c != "timings")
    untimed.model = replace(untimed.model, capabilities=caps)
    chart.update_from(untimed)
    assert not len(chart.times) and chart.empty.isVisible()
    assert chart.empty.textItem.toPlainText() == UNTIMED
    xs, _ys = chart.curve.getData()
    assert xs is None or len(xs) == 0
