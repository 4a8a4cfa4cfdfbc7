"""The Confidence tab's "Compare with…" on the real models: SmolLM2-135M (the playground's)
answers 2 bundled questions, then Compare runs the same parameters on Gemma 3 270M, and
the "Side by side" tab shows both: each side's cells are read again here from its own
ConfidenceResult (the engine's, as lab_done delivered it)."""

from __future__ import annotations

import pytest

from app.lab.confidence_charts import short_name
from engine.lab.confidence_stats import half_up

N = 2  # questions: each side's cells per question are read the same way for any number


def _cells(table) -> list[list[str]]:
    return [
        [table.item(i, j).text() for j in range(table.columnCount())]
        for i in range(table.rowCount())
    ]


def _auroc(s) -> str:
    if not s.informative:
        return "not informative here"
    if s.auroc is None:  # every answer right, or every one wrong: the result's `why`
        return "undefined"
    if s.auroc_low is None:
        return half_up(s.auroc, 2)
    lo, hi = half_up(s.auroc_low, 2), half_up(s.auroc_high, 2)
    return f"{half_up(s.auroc, 2)} ({lo}–{hi})"


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


@pytest.mark.timeout(900)
def test_two_models_on_the_same_questions_side_by_side(qtbot, window, gemma_path):
    lab = window.open_lab()
    qtbot.addWidget(lab)
    view = lab.show_tab("calibrate")
    view.limit.setValue(N)
    view.samples.setValue(2)
    done = []
    lab.bridge.lab_done.connect(lambda rec: done.append(rec.result))
    assert not view.compare.isEnabled()  # nothing to compare with yet
    view.run.click()
    qtbot.waitUntil(lambda: len(done) == 1 and not lab.bridge.busy, timeout=300_000)
    a = done[0]
    assert view.result is a and a.answered == N and a.model == window.model_record.name
    view.choose_model(str(gemma_path))
    assert view.chosen_model() == str(gemma_path) and view.compare.isEnabled()
    view.compare.click()
    qtbot.waitUntil(lambda: len(done) == 2 and not lab.bridge.busy, timeout=600_000)
    b = done[1]
    assert view.other is b and view.result is a  # side A stays the tab's result
    assert "gemma" in b.model.lower() and b.model != a.model
    same = ("questions_file", "samples", "temperature", "asked", "max_tokens")
    assert [getattr(b, f) for f in same] == [getattr(a, f) for f in same]
    assert [r.line for r in b.rows] == [r.line for r in a.rows]
    assert [r.question for r in b.rows] == [r.question for r in a.rows]
    side = view.side
    assert view.lower.currentWidget() is side and (side.a, side.b) == (a, b)

    # accuracy: each side's own
    for r, tag in ((a, "A"), (b, "B")):
        right = sum(row.correct for row in r.rows)
        said = f"{tag} — {r.model}: {half_up(100 * right / r.answered)} % right ({right} of {N})"
        assert said in side.head.text()
        assert (f"{tag}'s AUROC is undefined: {r.why}" in side.head.text()) == bool(r.why)
    # each signal's AUROC with its interval, A's and B's
    signals = _cells(side.signals)
    assert [row[0] for row in signals] == [short_name(s.key) for s in a.signals]
    by_b = {s.key: s for s in b.signals}
    for row, s in zip(signals, a.signals, strict=True):
        assert row[1] == _auroc(s) and row[2] == _auroc(by_b[s.key])
    # both verdicts per question
    questions = _cells(side.questions)
    assert len(questions) == N
    for cells, ra, rb in zip(questions, a.rows, b.rows, strict=True):
        assert cells[0] == ra.question
        assert cells[1] == _first_line(ra.answer) and cells[3] == _first_line(rb.answer)
        assert cells[2] == ("✓ right" if ra.correct else "✗ wrong")
        assert cells[4] == ("✓ right" if rb.correct else "✗ wrong")
    lab.close()
