"""A window that fits any screen and explains itself: splitters, remembered geometry,
hover readouts, explanations with the run's numbers, menus."""

from __future__ import annotations

import math

from PySide6.QtCore import QPoint, QPointF
from PySide6.QtGui import QKeySequence

from app.charts.panel import columns_for
from app.core.bridge import EngineBridge
from app.shell.layout import CENTER_MIN, CHARTS_MIN, SIDE_MIN
from app.shell.window import PlaygroundWindow
from engine.display.units import fmt_prob
from tests.app.conftest import LOAD_MS, run_and_wait


def test_splitters_never_collapse_a_panel(qtbot, replay_window):
    replay_window.resize(1024, 700)
    replay_window.toggle_side_panel(True)
    qtbot.wait(50)
    split = replay_window.split
    for handle, pos in ((1, 0), (1, 5000), (2, 0), (2, 5000)):
        split.moveSplitter(pos, handle)
        qtbot.wait(20)
        side, center, charts = (split.widget(i).width() for i in range(3))
        assert side >= SIDE_MIN and center >= CENTER_MIN and charts >= CHARTS_MIN
    assert not split.childrenCollapsible()


def test_charts_reflow_with_width(qtbot, replay_window):
    assert columns_for(400) == 0 and columns_for(800) == 2 and columns_for(1600) == 3
    replay_window.resize(1024, 700)
    replay_window.toggle_side_panel(False)
    qtbot.waitUntil(lambda: replay_window.charts.columns == 2, timeout=2000)
    replay_window.charts.toggle_enlarged("temp")
    assert replay_window.charts.frames["temp"].isVisible()
    assert not replay_window.charts.frames["dist"].isVisible()
    replay_window.charts.toggle_enlarged("temp")
    assert replay_window.charts.frames["dist"].isVisible()


def test_geometry_and_panels_are_remembered(qtbot, window, engine_client):
    window.toggle_side_panel(False)
    window.resize(760, 580)  # within the offscreen test screen (800 x 600)
    qtbot.wait(50)
    window.split.setSizes([300, 340, 400])
    qtbot.wait(50)
    sizes = window.split.sizes()
    window.close()
    again = PlaygroundWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False), load_on_start=False
    )
    qtbot.addWidget(again)
    again.show()
    qtbot.wait(50)
    assert (again.width(), again.height()) == (760, 580)
    assert not again.side_visible and not again.side_tabs.isVisible()
    assert (
        abs(again.split.sizes()[1] - sizes[1]) <= 2 and abs(again.split.sizes()[2] - sizes[2]) <= 2
    )
    again.cleanup()


def test_hover_readout_and_explanations_use_the_runs_numbers(qtbot, replay_window):
    state = run_and_wait(qtbot, replay_window, "Name a fruit.", temperature=0.8, max_tokens=6)
    replay_window.select_step(2)
    rec = state.tokens[2]
    dist = replay_window.dist_chart
    frame = replay_window.charts.frames["dist"]
    # Move a real mouse over the second bar: the readout names it with its numbers.
    vb = dist.getPlotItem().vb
    scene = vb.mapViewToScene(QPointF(dist.raw_probs[1] / 2, 1.0))
    pixel = dist.mapFromScene(scene)
    qtbot.mouseMove(dist.viewport(), QPoint(pixel.x(), pixel.y()))
    qtbot.waitUntil(lambda: "raw" in frame.readout.text(), timeout=2000)
    assert f"raw {dist.raw_probs[1]:.1%}" in frame.readout.text()
    assert repr(dist.texts[1]) in frame.readout.text()
    text = frame.explanation()
    assert f"At step 2 the model gave {rec.label!r} " in text
    assert fmt_prob(rec.prob) in text  # the one way every view writes a probability
    sampled = rec.sampled_prob_of(rec.token_id)
    assert f"made it {fmt_prob(sampled)}" in text
    ctx = replay_window.charts.frames["context"].explanation()
    assert f"{state.done.system_tokens:,} system" in ctx
    tp = replay_window.charts.frames["throughput"].explanation()
    assert f"decode {state.done.decode_tps:.1f} tok/s" in tp
    # The timeline's readout at step 3.
    plot = replay_window.timeline_chart.prob_plot
    pos = plot.vb.mapViewToScene(QPointF(3, 0.5))
    assert replay_window.timeline_chart.readout(pos).startswith(f"step 3 {state.tokens[3].label!r}")
    temp_pos = replay_window.temp_chart.getPlotItem().vb.mapViewToScene(QPointF(1.0, 0.5))
    assert replay_window.temp_chart.readout(temp_pos).startswith("T=1.00:")
    assert math.isfinite(replay_window.throughput_chart.tps[-1])
    top = replay_window.timeline_chart.entropy_plot.vb.viewRange()[1][1]
    assert top >= max(t.entropy for t in state.tokens)  # no entropy cut off


def test_empty_charts_have_no_negative_axes(qtbot, engine_client, default_model_path):
    win = PlaygroundWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False), load_on_start=False
    )
    qtbot.addWidget(win)
    win.show()
    for chart in (win.throughput_chart, win.dist_chart, win.context_chart, win.temp_chart):
        (x0, _x1), (y0, _y1) = chart.getPlotItem().vb.viewRange()
        assert x0 >= -1e-9 and (
            y0 >= -1e-9 or chart is win.dist_chart or chart is win.context_chart
        ), chart
        assert chart.empty.isVisible()
    assert "Run a prompt" in win.charts.frames["dist"].explanation()
    assert not win.progress.isVisible()  # no empty box in the status bar
    win.cleanup()


def test_menus_shortcuts_and_disabled_controls(qtbot, replay_window):
    acts = replay_window.actions_
    for name in ("new", "open", "import", "export", "quit", "run", "stop", "compare"):
        assert not acts[name].shortcut().isEmpty(), name
    assert acts["quit"].shortcut() == QKeySequence("Ctrl+Q")
    titles = [a.text() for a in replay_window.menuBar().actions()]
    assert titles[:3] == ["&File", "&Run", "&View"]
    replay_window.controls.mode.setCurrentIndex(1)  # raw completion
    assert not replay_window.controls.system.isEnabled()
    replay_window.controls.mode.setCurrentIndex(0)
    assert replay_window.controls.system.isEnabled()
    assert not replay_window.follow_button.isEnabled()  # already following
    qtbot.waitUntil(lambda: replay_window.model_record is not None, timeout=LOAD_MS)


def test_blank_space_under_the_answer_shows_no_token(qtbot, replay_window):
    """Seen: hovering blank space under the answer showed the last token's tooltip."""
    run_and_wait(qtbot, replay_window, "Say hi.", max_tokens=3)
    view = replay_window.output
    bottom = QPoint(view.viewport().width() // 2, view.viewport().height() - 5)
    assert view.step_at(bottom) is None
    from PySide6.QtGui import QTextCursor

    token = view._cursor_for(0)
    inside = QTextCursor(view.document())
    inside.setPosition((token.selectionStart() + token.selectionEnd()) // 2)
    assert view.step_at(view.cursorRect(inside).center()) == 0
