"""Issue 26's small things, on the widgets alone (no model): a compact settings panel,
an enlarged chart that fills its panel, clean empty states, a progress text that fits,
the Lab header per tab."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from PySide6.QtWidgets import QFormLayout

from app.charts.panel import CONTEXT_MIN_HEIGHT, ChartsPanel
from app.compare.divergence import EMPTY, NONE_DIVERGED, draw_divergence, new_divergence_chart
from app.inside.attention_view import WAITING, AttentionView
from app.lab.window import DONE, LabWindow
from app.shell.layout import ElidedProgressBar, build_side
from engine.lab import QuantResult
from engine.run.records import LabRecord

LONG = "Converting gemma-3-270m-it-q4_k_m.gguf to MLX (dequantizing 236 tensors, 2 of 3)…"


@pytest.mark.parametrize("height", [700, 900])
def test_settings_rows_sit_together_at_the_top(qtbot, height):
    side = build_side()
    qtbot.addWidget(side.tabs)
    side.tabs.resize(360, height - 90)  # the side panel of a 1024x700 / 1440x900 window
    side.tabs.show()
    qtbot.waitExposed(side.tabs)
    form = side.controls.layout()
    field = QFormLayout.ItemRole.FieldRole
    rows = [form.itemAt(i, field).geometry() for i in range(form.rowCount())]
    gaps = [b.top() - a.bottom() for a, b in zip(rows, rows[1:], strict=False)]
    assert max(gaps) <= 12, gaps  # was ~45 px at 900: the spare height went between rows
    assert side.controls.height() <= side.controls.sizeHint().height() + 2


def test_an_enlarged_chart_fills_the_panel_and_comes_back(qtbot):
    panel = ChartsPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    qtbot.waitUntil(lambda: panel.columns == 2, timeout=2000)
    temp = panel.frames["temp"]
    grid_size = temp.size()
    panel.toggle_enlarged("temp")
    qtbot.waitUntil(lambda: temp.width() >= panel.width() - 4, timeout=2000)
    assert temp.height() >= panel.height() - 4 and temp.isVisible()
    assert temp.enlarge_button.isChecked()
    assert not any(f.isVisible() for n, f in panel.frames.items() if n != "temp")
    panel.resize(1000, 700)  # a reflow keeps it enlarged
    qtbot.waitUntil(lambda: temp.width() >= 996, timeout=2000)
    panel.resize(900, 700)
    panel.toggle_enlarged("temp")
    qtbot.waitUntil(lambda: all(f.isVisible() for f in panel.frames.values()), timeout=2000)
    assert temp.size() == grid_size and not temp.enlarge_button.isChecked()


def test_the_context_chart_keeps_room_for_its_bars(qtbot):
    panel = ChartsPanel()
    qtbot.addWidget(panel)
    panel.resize(600, 620)  # the charts of a 1024x700 window: two columns, three rows
    panel.show()
    qtbot.waitUntil(lambda: panel.columns == 2, timeout=2000)
    qtbot.waitUntil(lambda: panel.frames["context"].height() >= CONTEXT_MIN_HEIGHT, timeout=2000)
    assert panel.frames["dist"].height() >= 150  # and the others still theirs


def _empty_message(plot) -> str | None:
    shown = [i for i in plot.items if hasattr(i, "textItem") and i.isVisible()]
    return shown[0].textItem.toPlainText() if shown else None


def test_divergence_chart_starts_and_falls_back_to_a_message(qtbot):
    chart = new_divergence_chart()
    qtbot.addWidget(chart)
    plot = chart.getPlotItem()
    assert _empty_message(plot) == EMPTY.replace("Run a prompt to see ", "Run a prompt to see\n")
    assert plot.getAxis("left")._tickLevels == [[]]  # no reversed 0.2 … 0.8 numbers
    assert plot.viewRange()[1] == [0, 1]
    draw_divergence(plot, (), 0)
    assert _empty_message(plot) == NONE_DIVERGED


def test_attention_waits_with_a_message_not_an_empty_axis(qtbot):
    view = AttentionView()
    qtbot.addWidget(view)
    plot = view.plot.getPlotItem()
    assert _empty_message(plot) == WAITING
    assert not view.row_box.isVisible() and view.weights is None
    assert plot.getAxis("left")._tickLevels == [[]] == plot.getAxis("bottom")._tickLevels
    assert plot.viewRange() == [[0, 1], [0, 1]]  # not −1 … 2
    view.show_empty("Computing attention at step 3…")
    assert _empty_message(plot) == "Computing attention at step 3…"


def test_progress_text_is_elided_to_the_bar(qtbot):
    bar = ElidedProgressBar()
    qtbot.addWidget(bar)
    bar.setFixedWidth(260)
    bar.setRange(0, 1000)
    bar.setValue(300)
    bar.setFormat(LONG)
    shown = bar.text()
    assert shown.endswith("…") and shown != LONG and shown[:10] == LONG[:10]
    assert bar.fontMetrics().horizontalAdvance(shown) <= 260 - bar.PAD
    assert bar.toolTip() == LONG  # the whole message on hover
    bar.setFormat("Prefill 3/9")
    assert bar.text() == "Prefill 3/9"


def test_lab_says_done_only_on_the_tab_that_ran(qtbot, monkeypatch):
    model = SimpleNamespace(name="Tiny", backend="mlx", path="/nowhere")
    lab = LabWindow(lambda: (model, "Hello there", None))
    qtbot.addWidget(lab)
    lab.show_source()
    source = lab.status.text()
    assert "Tiny" in source and "Done" not in source
    monkeypatch.setattr(lab.quant, "show_result", lambda _result: None)
    lab.tabs.setCurrentWidget(lab.quant)
    lab.bridge.lab_done.emit(LabRecord("quant", QuantResult("m", "r", (), (), {}, {}, ())))
    assert lab.status.text() == DONE
    for view in (lab.cache, lab.speculative, lab.batch):
        lab.tabs.setCurrentWidget(view)
        assert lab.status.text() == source
    lab.tabs.setCurrentWidget(lab.quant)
    assert lab.status.text() == DONE
    lab.close()
