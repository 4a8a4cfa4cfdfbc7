"""Issue 38 in the window: Mode ▸ Read a text reads the prompt box's text through the
real model; the text is shaded by probability or GLTR rank, every chart follows a
clicked token, the timeline is surprisal with the perplexity, the status line gives
the read's figures, and the read is a run History lists and reopens."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np

from app.core.theme import rank_color
from app.widgets.controls import READ_MODE
from tests.app.conftest import RUN_MS

TEXT = "The capital of Australia is Sydney."


def read_and_wait(qtbot, win, text: str):
    win.controls.set_reading(True)
    win.prompt.setPlainText(text)
    win.run()
    ended = lambda: win.state.done is not None or win.state.error is not None  # noqa: E731
    qtbot.waitUntil(ended, timeout=RUN_MS)
    qtbot.waitUntil(lambda: not win.bridge.busy, timeout=10_000)
    qtbot.waitUntil(lambda: not win._dirty and not win._stale, timeout=5_000)
    return win.state


def test_reading_a_text_shows_every_token_and_every_view_follows(qtbot, replay_window):
    window = replay_window
    progress = []
    window.bridge.progress.connect(lambda message, fraction: progress.append((message, fraction)))
    state = read_and_wait(qtbot, window, TEXT)
    # The progress bar follows the read: tokens read of the text's, up to the whole.
    assert progress and progress[-1][1] == 1.0 and progress[-1][0].startswith("read ")
    assert state.error is None and state.reading
    summary = state.done.reading
    tokens = state.tokens
    assert all(t.read for t in tokens) and "".join(t.text for t in tokens) == TEXT
    assert window.output.plain_text() == TEXT  # the text itself, shaded, not an answer
    # The figures against NumPy float64 over the shown tokens' log-probabilities.
    lps = np.array([t.logprob for t in tokens], dtype=np.float64)
    assert summary.tokens == len(tokens)
    assert math.isclose(summary.perplexity, math.exp(-lps.mean()), rel_tol=1e-9)
    bpb = -lps.sum() / math.log(2) / len(TEXT.encode())
    assert math.isclose(summary.bits_per_byte, bpb, rel_tol=1e-9)
    status = window.status_label.text()
    assert f"perplexity {summary.perplexity:,.2f}" in status and "bits/byte" in status
    # The timeline is each token's surprisal in bits, titled with the perplexity.
    _x, bits = window.timeline_chart.prob_curve.getData()
    np.testing.assert_allclose(bits, -lps / math.log(2), rtol=1e-6)
    assert window.timeline_chart.axis_titles["prob"] in ("surprisal (bits)", "bits")
    # Clicking a token moves every chart to that position.
    window.select_step(3)
    qtbot.waitUntil(lambda: not window._dirty and not window._stale, timeout=5_000)
    record = tokens[3]
    assert window.dist_chart.record is record
    expected = sorted((math.exp(c.logprob) for c in record.top), reverse=True)
    expected = expected[: len(window.dist_chart.raw_probs)]
    np.testing.assert_allclose(sorted(window.dist_chart.raw_probs, reverse=True), expected)
    assert window.timeline_chart.lines[0].value() == 3
    # Shading by GLTR's rank buckets: each token's background is its bucket's hue.
    window.shading.by_rank.setChecked(True)
    fmt = window.output._cursor_for(5).charFormat()
    assert fmt.background().color().name() == rank_color(tokens[5].rank).name()
    window.shading.by_rank.setChecked(False)
    # Branching a read is refused with a reason, never started.
    assert "no branches" in window.branch_flow.why_not()


def test_a_read_is_a_run_history_reopens_as_a_read(qtbot, replay_window):
    window = replay_window
    state = read_and_wait(qtbot, window, "Rain falls on the hills.")
    run_id = state.run_id
    history = window.session.history
    history.refresh()
    _session, run = history.find_run(run_id)
    assert run is not None and run.prompt == "Rain falls on the hills."
    window.show_run(run)
    shown = window.state
    assert shown.reading and shown.done.reading.perplexity == state.done.reading.perplexity
    assert [t.logprob for t in shown.tokens] == [t.logprob for t in state.tokens]


def test_an_empty_text_or_a_binary_file_is_refused_in_one_sentence(qtbot, replay_window, tmp_path):
    window = replay_window
    from app.shell.file_drop import open_path

    window.controls.set_reading(True)
    window.prompt.setPlainText("   ")
    window.run()
    assert "no text to read" in window.banner.text() and not window.bridge.busy
    binary = tmp_path / "notes.txt"
    binary.write_bytes(b"abc\0def")
    assert open_path(window, str(binary)) is None
    assert "not a text file" in window.banner.text()
    good = tmp_path / "story.md"
    good.write_text("Once upon a time.", encoding="utf-8")
    assert open_path(window, str(good)) == "text"
    assert window.controls.mode.currentIndex() == READ_MODE
    qtbot.waitUntil(lambda: window.state.done is not None, timeout=RUN_MS)
    assert "".join(t.text for t in window.state.tokens) == "Once upon a time."


def _record(step: int, read: bool, forced: bool = False):
    from engine.run.records import TokenRecord, TopToken

    top = (TopToken(7, " Sydney", math.log(0.2)), TopToken(8, " Canberra", math.log(0.7)))
    sampled = (0.25, 0.75) if not read else (0.2, 0.7)
    return TokenRecord(
        step, 7, " Sydney", math.log(0.2), 0.2, math.log(0.2), top, top, 0.9, 0.9,
        0.1, 0.1, 10 + step, sampled_probs=sampled, rank=2, read=read, forced=forced,
    )  # fmt: skip


def test_a_read_tokens_hover_says_read_and_offers_no_branch(qtbot, monkeypatch):
    """Built from records: the tooltip of a token of a read says "read" with its rank and
    the model's one distribution; neither it nor the menus offer to branch or sample."""
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QContextMenuEvent
    from PySide6.QtWidgets import QMenu

    from app.charts.distribution import DistributionChart
    from app.widgets.branch_menu import BranchRequests, branch_hint
    from app.widgets.token_view import TokenView, alternatives_html

    read, chosen = _record(5, read=True), _record(5, read=False)
    tip = alternatives_html(read)
    assert "· read " in tip and "chose" not in tip and "rank 2" in tip
    assert "sampled" not in tip and "70.0%" in tip  # one column: the model's p
    assert "75.0%" in alternatives_html(chosen) and "chose" in alternatives_html(chosen)
    assert branch_hint(read) == "" and "sample futures" in branch_hint(chosen)

    menus = []

    class Captured(QMenu):
        def exec(self, *_a):  # shown for real, it would wait for a click
            menus.append(self)

    for record in (read, chosen):
        view = TokenView()
        qtbot.addWidget(view)
        view.offer_branches(BranchRequests(view), lambda: None)
        view.append_tokens([dataclasses.replace(record, step=0, text="Sydney")])
        monkeypatch.setattr(view, "createStandardContextMenu", lambda v=view: Captured(v))
        view.resize(300, 100)
        view.show()
        qtbot.waitExposed(view)
        pos = view.cursorRect(view._cursor_for(0)).center()
        assert view.step_at(pos) == 0
        view.contextMenuEvent(QContextMenuEvent(QContextMenuEvent.Mouse, pos, QPoint()))
    texts = [[a.text() for a in m.actions()] for m in menus]
    assert all(any(t.startswith("Inspect step 0") for t in ts) for ts in texts)
    offers = [any(t.startswith(("Continue from", "Sample futures")) for t in ts) for ts in texts]
    assert offers == [False, True]  # the read's token: inspect and copy, no branch

    chart = DistributionChart()
    qtbot.addWidget(chart)
    chart.offer_branches(BranchRequests(chart), lambda: None)
    monkeypatch.setattr(chart, "bar_at", lambda _pos: 0)  # a click on the first bar
    asked = []
    menu = SimpleNamespace(popup=lambda *_a: None)
    monkeypatch.setattr(chart, "branch_menu", lambda i: asked.append(i) or menu)
    click = SimpleNamespace(
        scenePos=lambda: None, screenPos=lambda: QPointF(0, 0), accept=lambda: None
    )
    for record in (read, chosen):
        chart.show_record(record)
        chart._clicked(click)
    assert asked == [0]  # the chosen token's bar offers its menu; the read's bar none
