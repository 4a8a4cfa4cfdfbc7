"""Lab ▸ Routing on the real models: SmolLM2-135M (the playground's, the small model) and
Gemma 3 270M (the large one) answer 3 bundled questions in the Lab's engine; what the tab
draws is read back from its charts and table and compared with the engine's RouteResult
(as lab_done delivered it)."""

from __future__ import annotations

import html
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QObject, Signal

from app.lab.routing_view import RoutingView
from engine.errors import SettingsError
from engine.lab.routing import RoutedQuestion, RouteParams, RouteResult, summarise

N = 2  # questions: the progress, the curves and the table read each the same way


def _data(curve) -> list[tuple[float, float]]:
    xs, ys = curve.getData()
    return [] if xs is None else list(zip(xs.tolist(), ys.tolist(), strict=True))


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


@pytest.mark.timeout(900)
def test_routing_tab_draws_the_engines_result(qtbot, window, gemma_path):
    lab = window.open_lab()
    qtbot.addWidget(lab)
    lab.resize(1200, 760)
    view = lab.show_tab("route")
    assert lab.current_kind() == "route"
    assert view.small_path == window.model_record.path  # the playground's model answers first
    view.limit.setValue(N)
    view.choose_large(str(gemma_path))
    params = view.params()
    assert isinstance(params, RouteParams)
    assert (params.small, params.large, params.limit) == (
        window.model_record.path,
        str(gemma_path),
        N,
    )
    done, steps = [], []
    lab.bridge.lab_done.connect(lambda rec: done.append(rec.result))
    lab.bridge.progress.connect(lambda m, f: steps.append(m))
    view.run.click()
    assert view.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: len(done) == 1 and not lab.bridge.busy, timeout=600_000)
    r = done[0]
    assert isinstance(r, RouteResult) and view.result is r
    assert (r.asked, r.answered, r.compared) == (N, N, N) and not r.cancelled
    assert r.small == window.model_record.name and "gemma" in r.large.lower()
    # progress per question, both models
    for i in range(1, N + 1):
        assert any(f"question {i} of {N}" in m and r.small in m for m in steps)
        assert any(f"question {i} of {N}" in m and r.large in m for m in steps)

    # the routing curve: the cascade, the oracle, the random line, the 95 % point
    assert r.points
    assert _data(view.curve.cascade) == [(p.share, p.accuracy) for p in r.points]
    assert _data(view.curve.oracle) == [(p.share, p.oracle_accuracy) for p in r.points]
    assert _data(view.curve.random) == [(0.0, r.small_accuracy), (1.0, r.large_accuracy)]
    t = r.target_point
    xs, ys = view.curve.target.getData()
    assert list(zip(xs, ys, strict=True)) == ([(t.share, t.accuracy)] if t else [])
    assert view.curve.keep.value() == pytest.approx(r.target * r.large_accuracy)
    # the cost curve against all-large
    assert _data(view.cost.cost) == [(p.share, p.relative_cost) for p in r.points]
    assert _data(view.cost.alone) == [(0.0, 1.0), (1.0, 1.0)]
    xs, ys = view.cost.target.getData()
    assert list(zip(xs, ys, strict=True)) == ([(t.share, t.relative_cost)] if t else [])
    # APGR and the sentence
    text = view.summary.text()
    assert html.escape(r.sentence, quote=False) in text
    if r.apgr is None:
        assert "APGR undefined" in text
    else:
        assert f"APGR {r.apgr:.2f}" in text

    # the table: a row per question, in the result's order
    table = view.table
    assert table.rowCount() == len(r.rows) == N
    for i, row in enumerate(r.rows):
        cells = [table.item(i, c).text() for c in range(table.columnCount())]
        assert cells[0] == str(row.line) and cells[1] == row.question
        assert cells[2] == (_first_line(row.small_answer) or "(nothing)")
        assert cells[3] == ("✓ right" if row.small_correct else "✗ wrong")
        assert cells[4] == ("—" if row.signal is None else f"{row.signal:.3f}")
        assert cells[5] == (_first_line(row.large_answer) or "(nothing)")
        assert cells[6] == ("✓ right" if row.large_correct else "✗ wrong")
        if t is not None:
            up = t.threshold is None or row.signal is None or row.signal < t.threshold
            assert cells[7] == ("escalated" if up else "kept")

    qtbot.wait(200)
    out = Path(os.environ.get("ROUTING_PNG", "/tmp/lab_routing_tab.png"))
    assert lab.grab().save(str(out))
    lab.close()


class _Bridge(QObject):
    progress = Signal(str, float)
    busy_changed = Signal(bool)
    busy = False


def _row(line: int, signal: float, small: bool, large: bool) -> RoutedQuestion:
    return RoutedQuestion(
        line=line,
        question=f"Question {line}?",
        signal=signal,
        small_answer=f"small {line}\nmore",
        small_correct=small,
        small_seconds=1.0,
        small_tokens=10,
        large_answer=f"large {line}",
        large_correct=large,
        large_seconds=4.0,
        large_tokens=10,
    )


def test_a_large_model_that_is_better_draws_apgr_and_the_95_point(qtbot):
    """No model: a RouteResult made by engine.lab.routing.summarise from rows where the
    large model is the better one (APGR defined, a 95 % point that escalates some)."""
    view = RoutingView(_Bridge())
    qtbot.addWidget(view)
    with pytest.raises(SettingsError, match="playground"):
        view.params()  # no small model yet
    rows = [_row(1, 0.9, True, True), _row(2, 0.2, False, True), _row(3, 0.5, True, False)]
    rows.append(_row(4, 0.1, False, True))
    r = summarise(
        rows,
        small="S",
        large="L",
        questions_file="q.jsonl",
        signal="min_prob",
        asked=4,
        watts=10.0,
        energy_basis="estimated",
        price_per_kwh=0.3,
        currency="EUR",
    )
    assert r.apgr is not None and r.target_point is not None and r.target_point.escalated
    view.show_result(r)
    assert _data(view.curve.cascade) == [(p.share, p.accuracy) for p in r.points]
    assert _data(view.curve.oracle) == [(p.share, p.oracle_accuracy) for p in r.points]
    assert _data(view.cost.cost) == [(p.share, p.relative_cost) for p in r.points]
    xs, ys = view.curve.target.getData()
    assert list(zip(xs, ys, strict=True)) == [(r.target_point.share, r.target_point.accuracy)]
    text = view.summary.text()
    assert f"APGR {r.apgr:.2f} (random 0.50, oracle {r.oracle_apgr:.2f})" in text
    assert html.escape(r.sentence, quote=False) in text
    t = r.target_point.threshold
    at = [view.table.item(i, 7).text() for i in range(view.table.rowCount())]
    assert at == ["escalated" if row.signal < t else "kept" for row in rows]
    assert [view.table.item(i, 2).text() for i in range(4)] == [f"small {i}" for i in (1, 2, 3, 4)]
    # the cascade at a threshold the person chooses: the column and the line, recomputed
    view.threshold.setValue(0.3)
    sig = np.array([row.signal for row in rows])
    up = sig < 0.3
    at = [view.table.item(i, 7).text() for i in range(view.table.rowCount())]
    assert at == ["escalated" if u else "kept" for u in up]
    small_ok = np.array([row.small_correct for row in rows])
    large_ok = np.array([row.large_correct for row in rows])
    accuracy = np.where(up, large_ok, small_ok).mean()
    seconds = sum(row.small_seconds for row in rows) + sum(
        row.large_seconds for row, u in zip(rows, up, strict=True) if u
    )
    share = seconds / sum(row.large_seconds for row in rows)
    line = view.cascade.text()
    assert f"{int(up.sum())} of 4 escalated ({up.mean():.0%})" in line
    assert f"accuracy {accuracy:.0%}" in line and f"{share:.0%} of the time" in line


def test_the_95_point_column_uses_the_exact_threshold_not_the_spin_boxs(qtbot):
    """Signals closer together than the threshold box's 3 decimals: the table's column and
    the line below say what the 95 % point does (the engine's threshold), not what the
    value rounded for display would do."""
    view = RoutingView(_Bridge())
    qtbot.addWidget(view)
    rows = [_row(1, 0.4562, False, True), _row(2, 0.4564, False, True)]
    rows += [_row(3, 0.4566, True, True), _row(4, 0.9, True, False)]
    r = summarise(
        rows, small="S", large="L", questions_file="q.jsonl", signal="min_prob", asked=4,
        watts=10.0, energy_basis="estimated", price_per_kwh=0.3, currency="EUR",
    )  # fmt: skip
    t = r.target_point
    assert t is not None and t.threshold is not None
    assert round(t.threshold, 3) != t.threshold  # the box cannot show it exactly
    view.show_result(r)
    at = [view.table.item(i, 7).text() for i in range(view.table.rowCount())]
    assert at == ["escalated" if row.signal < t.threshold else "kept" for row in rows]
    assert f"{t.escalated} of 4 escalated" in view.cascade.text()


def test_double_clicking_a_row_opens_its_journaled_answer(qtbot, tmp_path):
    """A row's small and large runs, journaled, open in the playground (`open_run`)."""
    from engine.run.records import DoneRecord
    from engine.sessions.journal import Journal

    journal = Journal.create(title="Routing")
    ids = []
    for name in ("small", "large"):
        run_id = journal.start_run("Question 1?", {}, None)
        journal.record(run_id, DoneRecord("stop", name, 3, 1, 0.1, 1, 1, None, None, 8, None, 1.0))
        ids.append(run_id)
    journal.close()
    row = replace(_row(1, 0.2, False, True), small_run=ids[0], large_run=ids[1])
    r = summarise(
        [row],
        small="S",
        large="L",
        questions_file="q",
        signal="min_prob",
        asked=1,
        watts=10.0,
        energy_basis="estimated",
        price_per_kwh=0.3,
        currency="EUR",
    )
    view = RoutingView(_Bridge())
    qtbot.addWidget(view)
    view.show_result(r)
    opened = []
    view.open_run.connect(opened.append)
    view.table.cellDoubleClicked.emit(0, 2)  # the small answer's cell
    view.table.cellDoubleClicked.emit(0, 5)  # the large answer's
    assert [run.run_id for run in opened] == ids
    assert [run.done.text for run in opened] == ["small", "large"]
